"""KubeSchedulerConfiguration for netsched: load, default, validate, write.

    cfg = load_config("/etc/netsched/config.yaml", registry)   # raises ConfigError
    write_config(cfg, "effective.yaml")                        # like --write-config-to

The loader follows kube-scheduler's v1 semantics (defaults, multiPoint
expansion, enabled/disabled merging, validation wording); the modules behind
this facade are: types (the dataclasses and their defaults), defaults (the
default plugin set, kube's merge, the lease name), resolve (per-point plugin
lists and weights), validate, load, write, duration, errors.  The field reader
and error list they use are the framework's (netsched.framework.fields), shared
with plugin args decoders.
"""

from netsched.config.defaults import DEFAULT_PLUGINS, default_lease_name
from netsched.config.duration import format_duration, parse_duration
from netsched.config.errors import ConfigError
from netsched.config.load import load_config, parse_yaml, read_config_file
from netsched.config.types import (
    API_VERSION,
    DEFAULT_SCHEDULER_NAME,
    EXTENSION_POINTS,
    MULTI_POINT,
    ClientConnection,
    LeaderElectionConfig,
    PluginRef,
    PluginSet,
    Profile,
    SchedulerConfig,
)
from netsched.config.validate import validate_config
from netsched.config.write import dump_config, encode_config, write_config

__all__ = [
    "API_VERSION",
    "DEFAULT_PLUGINS",
    "DEFAULT_SCHEDULER_NAME",
    "EXTENSION_POINTS",
    "MULTI_POINT",
    "ClientConnection",
    "ConfigError",
    "LeaderElectionConfig",
    "PluginRef",
    "PluginSet",
    "Profile",
    "SchedulerConfig",
    "default_lease_name",
    "dump_config",
    "encode_config",
    "format_duration",
    "load_config",
    "parse_duration",
    "parse_yaml",
    "read_config_file",
    "validate_config",
    "write_config",
]
