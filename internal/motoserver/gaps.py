# moto_server with the gaps of moto's CloudFormation that clusterctl's
# templates meet filled in, so that the end-to-end tests deploy them as
# written. Each fix makes moto do what CloudFormation does; none changes
# what moto's own APIs answer.
import sys

from moto.elbv2 import models as elbv2


# A load balancer's Type: moto's CloudFormation makes every one an
# application load balancer, which refuses TCP, UDP and TLS listeners.
def _create_load_balancer(cls, resource_name, cloudformation_json, account_id, region_name, **kwargs):
    props = cloudformation_json["Properties"]
    backend = elbv2.elbv2_backends[account_id][region_name]
    return backend.create_load_balancer(
        resource_name,
        props.get("SecurityGroups") or [],
        props.get("Subnets"),
        scheme=props.get("Scheme", "internet-facing"),
        loadbalancer_type=props.get("Type", "application"),
    )


elbv2.FakeLoadBalancer.create_from_cloudformation_json = classmethod(_create_load_balancer)

# Deleting a stack deletes its target groups: moto's CloudFormation keeps
# them. (A target group a listener still uses is refused, and moto's
# CloudFormation tries it again once the listener is gone.)
def _delete_target_group(self, account_id, region):
    backend = elbv2.elbv2_backends[account_id][region]
    if self.arn in backend.target_groups:
        backend.delete_target_group(self.arn)


elbv2.FakeTargetGroup.delete = _delete_target_group

from moto.server import main  # noqa: E402

main(sys.argv[1:])
