# moto_server with the gaps clusterctl meets in moto filled in (most of them
# in its CloudFormation), so that the end-to-end tests and the real-engine
# scenarios run as written. Each fix makes moto do what AWS does; none
# changes what moto's own APIs answer. The fixes are applied when moto
# imports the module they fix, so the server starts as fast as moto_server.
import importlib.abc
import importlib.util
import os
import sys
import threading


def _one_at_a_time(cls, *names):
    """Makes the named methods of cls run one call at a time, all under one
    (re-entrant) lock: moto serves each request in a thread of its own and
    keeps its state without locks."""
    lock = threading.RLock()

    def locked(method):
        def call(self, *args, **kwargs):
            with lock:
                return method(self, *args, **kwargs)

        return call

    for name in names:
        setattr(cls, name, locked(getattr(cls, name)))


def _elbv2(m):
    # A load balancer's Type: moto's CloudFormation makes every one an
    # application load balancer, which refuses TCP, UDP and TLS listeners.
    def create(cls, resource_name, cloudformation_json, account_id, region_name, **kwargs):
        props = cloudformation_json["Properties"]
        return m.elbv2_backends[account_id][region_name].create_load_balancer(
            resource_name,
            props.get("SecurityGroups") or [],
            props.get("Subnets"),
            scheme=props.get("Scheme", "internet-facing"),
            loadbalancer_type=props.get("Type", "application"),
        )

    m.FakeLoadBalancer.create_from_cloudformation_json = classmethod(create)

    # Deleting a stack deletes its target groups: moto's CloudFormation
    # keeps them. (A target group a listener still uses is refused, and
    # moto's CloudFormation tries it again once the listener is gone.)
    def delete(self, account_id, region):
        backend = m.elbv2_backends[account_id][region]
        if self.arn in backend.target_groups:
            backend.delete_target_group(self.arn)

    m.FakeTargetGroup.delete = delete


def _autoscaling(m):
    # An update that removes target groups: CloudFormation updates the Auto
    # Scaling group first and deletes the target groups it no longer names
    # in its cleanup phase; moto deletes them first, and the Auto Scaling
    # group, still naming them, fails to find them. It now forgets the
    # target groups that are gone.
    update = m.AutoScalingBackend.update_attached_target_groups

    def update_existing(self, group_name):
        group = self.autoscaling_groups[group_name]
        group.target_group_arns = [a for a in group.target_group_arns if a in self.elbv2_backend.target_groups]
        return update(self, group_name)

    m.AutoScalingBackend.update_attached_target_groups = update_existing


def _cloudwatch(m):
    # AWS::CloudWatch::Alarm: moto's CloudFormation has no model for it and
    # leaves the stack's alarms out. They are now made (and updated,
    # deleted) through moto's own PutMetricAlarm and DeleteAlarms, named as
    # the template names them (the physical id, as CloudFormation's).
    from moto.core.common_models import CloudFormationModel

    m.Alarm.physical_resource_id = property(lambda self: self.name)
    m.Alarm.is_created = lambda self: True

    def put(props, name, account_id, region_name):
        return m.cloudwatch_backends[account_id][region_name].put_metric_alarm(
            name=props.get("AlarmName", name),
            namespace=props.get("Namespace"),
            metric_name=props.get("MetricName"),
            comparison_operator=props["ComparisonOperator"],
            evaluation_periods=int(props["EvaluationPeriods"]),
            period=int(props["Period"]),
            threshold=float(props["Threshold"]),
            statistic=props.get("Statistic"),
            description=props.get("AlarmDescription"),
            dimensions=props.get("Dimensions", []),
            alarm_actions=props.get("AlarmActions", []),
            ok_actions=props.get("OKActions", []),
            datapoints_to_alarm=int(props["DatapointsToAlarm"]) if "DatapointsToAlarm" in props else None,
            treat_missing_data=props.get("TreatMissingData"),
            actions_enabled=props.get("ActionsEnabled", True),
        )

    class CloudFormationAlarm(CloudFormationModel):
        __module__ = m.__name__  # moto finds a model's service by its module

        @staticmethod
        def cloudformation_name_type():
            return "AlarmName"

        @staticmethod
        def cloudformation_type():
            return "AWS::CloudWatch::Alarm"

        @classmethod
        def create_from_cloudformation_json(cls, resource_name, cloudformation_json, account_id, region_name, **kwargs):
            return put(cloudformation_json["Properties"], resource_name, account_id, region_name)

        @classmethod
        def update_from_cloudformation_json(cls, original_resource, new_resource_name, cloudformation_json, account_id, region_name):
            props = cloudformation_json["Properties"]
            if props.get("AlarmName", new_resource_name) != original_resource.name:
                m.cloudwatch_backends[account_id][region_name].delete_alarms([original_resource.name])
            return put(props, new_resource_name, account_id, region_name)

        @classmethod
        def delete_from_cloudformation_json(cls, resource_name, cloudformation_json, account_id, region_name):
            m.cloudwatch_backends[account_id][region_name].delete_alarms([resource_name])

    def delete(self, account_id, region_name):
        m.cloudwatch_backends[account_id][region_name].delete_alarms([self.name])

    m.Alarm.delete = delete
    m.CloudFormationAlarm = CloudFormationAlarm


def _s3(m):
    # A bucket's VersioningConfiguration: moto's CloudFormation leaves the
    # bucket unversioned, and PutObject answers no version id.
    create = m.FakeBucket.create_from_cloudformation_json.__func__

    def create_versioned(cls, resource_name, cloudformation_json, account_id, region_name, **kwargs):
        bucket = create(cls, resource_name, cloudformation_json, account_id, region_name, **kwargs)
        status = cloudformation_json.get("Properties", {}).get("VersioningConfiguration", {}).get("Status")
        if status:
            bucket.versioning_status = status
        return bucket

    m.FakeBucket.create_from_cloudformation_json = classmethod(create_versioned)


def _ec2_instances(m):
    # A launch template's network interface: EC2 launches from it with the
    # interface's security groups and its AssociatePublicIpAddress; moto
    # reads only SecurityGroupIds, so an instance got no security group
    # and a public IP whenever its subnet maps one on launch. The primary
    # interface's groups and public IP choice now apply, as in EC2.
    run = m.InstanceBackend.run_instances

    def run_instances(self, image_id, count, user_data, security_group_names, **kwargs):
        if kwargs.get("launch_template") and not kwargs.get("nics"):
            data = self._get_template_from_args(kwargs["launch_template"]).data
            for nic in data.get("NetworkInterfaces") or []:
                if str(nic.get("DeviceIndex", "")) != "0":
                    continue
                if not kwargs.get("security_group_ids") and nic.get("Groups"):
                    kwargs["security_group_ids"] = list(nic["Groups"])
                public = nic.get("AssociatePublicIpAddress")
                if public is not None:
                    kwargs["associate_public_ip"] = str(public).lower() == "true"
        return run(self, image_id, count, user_data, security_group_names, **kwargs)

    m.InstanceBackend.run_instances = run_instances


def _cloudformation_parsing(m):
    # Fn::Cidr: moto's CloudFormation does not know it, and a network
    # stack cuts its VPC's range into subnets with it. [block, count,
    # cidrBits] is the first count subnets of block with cidrBits host bits.
    import ipaddress

    clean = m.clean_json

    def clean_json(resource_json, resources_map):
        if isinstance(resource_json, dict) and "Fn::Cidr" in resource_json:
            block, count, bits = (clean(x, resources_map) for x in resource_json["Fn::Cidr"])
            net = ipaddress.ip_network(str(block))
            subnets = net.subnets(new_prefix=net.max_prefixlen - int(bits))
            return [str(next(subnets)) for _ in range(int(count))]
        return clean(resource_json, resources_map)

    m.clean_json = clean_json

    # A parameter named in a Fn::Sub string (${Param}): CloudFormation
    # updates the resources whose properties it changes, as for a Ref;
    # moto looks for Refs only, so a launch template whose user data subs
    # a changed parameter kept its version. Its names now count too.
    import re

    refs = m.get_references_from_template
    sub = re.compile(r"\$\{([^}!.]+)")

    def subs(template):
        if isinstance(template, dict):
            for key, value in template.items():
                text = value[0] if key == "Fn::Sub" and isinstance(value, list) and value else value
                if key == "Fn::Sub" and isinstance(text, str):
                    yield from sub.findall(text)
                yield from subs(value)
        elif isinstance(template, list):
            for item in template:
                yield from subs(item)

    def references(template):
        return refs(template) + list(subs(template))

    m.get_references_from_template = references


def _json_first(m):
    # Not a gap in what moto answers but in how it reads: moto parses every
    # template with PyYAML's pure-Python loader (YAML being a superset of
    # JSON), about a quarter of a second for one of our JSON templates and
    # the better part of the server's CPU in the end-to-end tests; it
    # parses a template again at each change set and each comparison.
    # CloudFormation reads a JSON template as JSON: so does moto now, with
    # Python's JSON parser, and reads anything else as YAML, as before.
    import json

    import yaml

    class JSONFirst:
        def __getattr__(self, name):
            return getattr(yaml, name)

        @staticmethod
        def load(stream, Loader):
            if isinstance(stream, str) and stream.lstrip().startswith("{"):
                try:
                    return json.loads(stream)
                except ValueError:
                    pass
            return yaml.load(stream, Loader=Loader)

    m.yaml = JSONFirst()


def _cloudformation_models(m):
    # A change set's execution: CloudFormation evaluates the stack's outputs
    # anew (an output that Refs a parameter gives its new value); moto keeps
    # the values it evaluated when they were first read, and a group joined
    # after an update-core read the core's old settings. They are now made again from the
    # template the change set brought.
    execute = m.CloudFormationBackend.execute_change_set

    def execute_change_set(self, change_set_name, stack_name=None):
        execute(self, change_set_name, stack_name)
        for cs in self.change_sets.values():
            if change_set_name in (cs.change_set_id, cs.change_set_name):
                stack = self.stacks[cs.stack_id]
                stack._parse_template()
                stack.output_map = stack._create_output_map()

    m.CloudFormationBackend.execute_change_set = execute_change_set

    # A creation's events carry its ClientRequestToken, as CloudFormation's
    # do: a CreateStack retried after its first response was lost meets
    # AlreadyExists, and its caller knows its own stack by the token. moto
    # leaves every event without one. The token of the CreateStack being
    # handled (_creating, set by _cloudformation_responses) is the events'.
    event_init = m.Event.__init__

    def init_event(self, *args, **kwargs):
        event_init(self, *args, **kwargs)
        self.client_request_token = getattr(_creating, "token", None)

    m.Event.__init__ = init_event
    _json_first(m)

    # A resource that moto fails to make (an error of its backend, or a
    # race between its request threads) failed the CreateStack itself and
    # left the stack CREATE_IN_PROGRESS for ever: a caller whose SDK
    # retried the call met AlreadyExists, knew the stack by its token and
    # waited for it without end. CloudFormation accepts the creation and
    # fails it: the stack now rolls back, or stops CREATE_FAILED when the
    # CreateStack asked DisableRollback (which moto itself does not keep:
    # _creating has it), the error as its reason.
    create_resources = m.Stack.create_resources

    def create_resources_or_fail(self):
        try:
            create_resources(self)
        except Exception as e:
            reason = f"{type(e).__name__}: {e}"
            if getattr(_creating, "disable_rollback", False):
                self.status = "CREATE_FAILED"
                self._add_stack_event("CREATE_FAILED", resource_status_reason=reason)
                return
            self._add_stack_event("ROLLBACK_IN_PROGRESS", resource_status_reason=reason)
            try:
                self.resource_map.delete()
            except Exception:
                pass  # what was made is left, as a failed rollback leaves it
            self.status = "ROLLBACK_COMPLETE"
            self._add_stack_event("ROLLBACK_COMPLETE")

    m.Stack.create_resources = create_resources_or_fail


# The ClientRequestToken and DisableRollback of the CreateStack this thread
# handles (moto's server handles a request in one thread, and creates the
# stack in it).
_creating = threading.local()


def _cloudformation_responses(m):
    create = m.CloudFormationResponse.create_stack

    def create_stack(self):
        _creating.token = self._get_param("ClientRequestToken")
        _creating.disable_rollback = self._get_bool_param("DisableRollback", False)
        try:
            return create(self)
        finally:
            _creating.token, _creating.disable_rollback = None, False

    m.CloudFormationResponse.create_stack = create_stack
    _json_first(m)

    # One CloudFormation request at a time, as each of CloudFormation's
    # stack operations is one consistent step. moto makes a stack's
    # resources in the request's own thread and reads its backends' state
    # without locks: a DescribeStacks evaluating the outputs of a stack
    # still being made made its resources a second time (an output's Ref
    # makes the resource it names when it is first looked up: two Auto
    # Scaling groups for one), and stacks made side by side failed on
    # dictionaries another creation changed. The whole request, its
    # answer's rendering included, holds the lock.
    _one_at_a_time(m.CloudFormationResponse, "call_action")


def _ec2_route_tables(m):
    # A route table and its routes go with their stack: moto's
    # CloudFormation keeps them, and the VPC, still holding a route table
    # besides its main one, then cannot be deleted.
    def delete_table(self, account_id, region_name):
        backend = self.ec2_backend
        if self.id not in backend.route_tables:
            return  # gone already: deleting twice is done
        for association_id in list(self._associations):
            backend.disassociate_route_table(association_id)
        backend.delete_route_table(self.id)

    m.RouteTable.delete = delete_table

    def delete_route(self, account_id, region_name):
        from moto.ec2.models import ec2_backends

        table = ec2_backends[account_id][region_name].route_tables.get(self.route_table.id)
        if table is not None:
            table._routes.pop(self.id, None)

    m.Route.delete = delete_route


def _ec2_subnets(m):
    # AWS::EC2::SubnetRouteTableAssociation: moto's CloudFormation records
    # it apart from the route table, which then lists no association, so
    # the subnet keeps the main route table's routes. It now associates
    # the table as EC2's AssociateRouteTable does, and its deletion
    # disassociates it.
    def create(cls, resource_name, cloudformation_json, account_id, region_name, **kwargs):
        from moto.ec2.models import ec2_backends

        props = cloudformation_json["Properties"]
        backend = ec2_backends[account_id][region_name]
        association = backend.create_subnet_association(route_table_id=props["RouteTableId"], subnet_id=props["SubnetId"])
        association.association_id = backend.associate_route_table(props["RouteTableId"], subnet_id=props["SubnetId"])
        return association

    m.SubnetRouteTableAssociation.create_from_cloudformation_json = classmethod(create)

    def delete(self, account_id, region_name):
        from moto.ec2.models import ec2_backends

        backend = ec2_backends[account_id][region_name]
        table = backend.route_tables.get(self.route_table_id)
        association_id = getattr(self, "association_id", "")
        if table is not None and association_id in table._associations:
            backend.disassociate_route_table(association_id)
        backend.subnet_associations.pop(f"{self.route_table_id}:{self.subnet_id}", None)

    m.SubnetRouteTableAssociation.delete = delete

    # A subnet's addresses: moto hands them out from one generator per
    # subnet, and two request threads launching into the same subnet ran
    # it at once ("generator already executing"), failing a group's
    # creation. Giving and taking back an address is now one step at a time.
    _one_at_a_time(m.Subnet, "get_available_subnet_ip", "request_ip", "del_subnet_ip")


def _ec2_gateways(m, kind):
    # NAT gateways and VPC endpoints go with their stack (moto's
    # CloudFormation keeps them).
    if kind == "nat":
        m.NatGateway.delete = lambda self, account_id, region_name: self.ec2_backend.delete_nat_gateway(self.id)
    else:
        def delete_endpoint(self, account_id, region_name):
            # A gateway endpoint's routes go with it, in the route tables
            # that are still there (the stack may have deleted some first).
            backend = self.ec2_backend
            self.route_table_ids = [r for r in self.route_table_ids or [] if r in backend.route_tables]
            backend.delete_vpc_endpoints([self.id])

        m.VPCEndPoint.delete = delete_endpoint


def _s3_responses(m):
    # A conditional PutObject (If-None-Match, If-Match): moto checks the
    # condition, then writes, with the server's other threads free to run
    # between the two, so two racing claims could both succeed. S3 decides
    # them atomically: writes of objects are made one at a time here.
    _one_at_a_time(m.S3Response, "put_object")


def _s3_utils(m):
    # A bucket's keys are listed (ListObjectVersions, ListObjects) from a
    # copy of the key store, each key's versions then read again from the
    # store: a key deleted in between read as None, and the listing failed
    # (a 500 with a TypeError). S3 lists what the bucket holds. The
    # versions are taken from moto's own copy (_self_iterable), which holds
    # them: a key deleted meanwhile is listed as it was when the listing
    # began.
    store = m._VersionedKeyStore

    def iterlists(self):
        yield from self._self_iterable().items()

    def iteritems(self):
        for key, versions in self._self_iterable().items():
            yield key, versions[-1]

    def itervalues(self):
        for versions in self._self_iterable().values():
            yield versions[-1]

    store._iterlists = store.lists = store.iterlists = iterlists
    store._iteritems = store.items = store.iteritems = iteritems
    store._itervalues = store.values = store.itervalues = itervalues


def _backends(m):
    # Not a gap but the server's cost: every request asked the file system
    # for the list of moto's modules (a listdir and a stat per module) to
    # find its service, the better part of the server's CPU per request.
    # The list does not change while the server runs: it is read once.
    modules = tuple(m.list_of_moto_modules())
    m.list_of_moto_modules = lambda: modules


def _responses(m):
    # Not a gap but the server's cost: to find a request's action, every
    # request listed the members of its service's response class (a dir()
    # and a getattr of each), a sixth to a third of the server's CPU for an
    # EC2 or CloudFormation call. A class's methods do not change while the
    # server runs (the fixes here replace methods, never add or remove
    # them, and run as their module is imported): they are listed once.
    find = m.method_names_from_class
    names = {}

    def method_names(cls):
        found = names.get(cls)
        if found is None:
            found = names[cls] = frozenset(find(cls))
        return found

    m.method_names_from_class = method_names


_FIXES = {"moto.backends": _backends, "moto.core.responses": _responses, "moto.s3.models": _s3, "moto.s3.responses": _s3_responses, "moto.s3.utils": _s3_utils, "moto.elbv2.models": _elbv2, "moto.autoscaling.models": _autoscaling, "moto.cloudwatch.models": _cloudwatch,
          "moto.ec2.models.instances": _ec2_instances, "moto.cloudformation.parsing": _cloudformation_parsing,
          "moto.cloudformation.models": _cloudformation_models, "moto.cloudformation.responses": _cloudformation_responses,
          "moto.ec2.models.route_tables": _ec2_route_tables, "moto.ec2.models.subnets": _ec2_subnets,
          "moto.ec2.models.nat_gateways": lambda m: _ec2_gateways(m, "nat"), "moto.ec2.models.vpcs": lambda m: _ec2_gateways(m, "vpce")}


class _Fixer(importlib.abc.MetaPathFinder):
    """Applies a fix right after its module is first executed."""

    def find_spec(self, name, path, target=None):
        fix = _FIXES.get(name)
        if fix is None:
            return None
        sys.meta_path.remove(self)
        try:
            spec = importlib.util.find_spec(name)
        finally:
            sys.meta_path.insert(0, self)
        if spec is None or spec.loader is None:
            return spec
        exec_module = spec.loader.exec_module

        def exec_and_fix(module):
            exec_module(module)
            fix(module)

        spec.loader.exec_module = exec_and_fix
        return spec


sys.meta_path.insert(0, _Fixer())


def _quiet():
    # werkzeug writes no line per request, for a server whose output nobody
    # reads (a line is a few percent of the server's CPU per request).
    import werkzeug.serving

    werkzeug.serving.WSGIRequestHandler.log_request = lambda self, code="-", size="-": None


def _exit_with_stdin():
    # The server ends when its standard input ends: the Go side holds the
    # pipe's other end, which closes when that process ends, however it
    # ends (killed by a test timeout too), so no server outlives its user.
    def watch():
        try:
            while os.read(0, 4096):
                pass
        finally:
            os._exit(0)

    threading.Thread(target=watch, name="exit-with-stdin", daemon=True).start()


def _options(argv):
    # Our options come first, before moto_server's own.
    while argv[:1] in (["--no-access-log"], ["--exit-with-stdin"]):
        {"--no-access-log": _quiet, "--exit-with-stdin": _exit_with_stdin}[argv[0]]()
        argv = argv[1:]
    return argv


from moto.server import main  # noqa: E402

main(_options(sys.argv[1:]))
