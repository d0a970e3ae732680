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

# An update that removes target groups: CloudFormation updates the Auto
# Scaling group first and deletes the target groups it no longer names in
# its cleanup phase; moto deletes them first, and the Auto Scaling group,
# still naming them, fails to find them. It now forgets the target groups
# that are gone.
from moto.autoscaling import models as autoscaling  # noqa: E402

_update_attached_target_groups = autoscaling.AutoScalingBackend.update_attached_target_groups


def _update_existing_target_groups(self, group_name):
    group = self.autoscaling_groups[group_name]
    group.target_group_arns = [a for a in group.target_group_arns if a in self.elbv2_backend.target_groups]
    return _update_attached_target_groups(self, group_name)


autoscaling.AutoScalingBackend.update_attached_target_groups = _update_existing_target_groups

from moto.server import main  # noqa: E402

main(sys.argv[1:])
