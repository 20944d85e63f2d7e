"""LvmVolumeCapacity's args: which StorageClass provisioners draw on the nodes' LVM volume groups."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from netsched.framework import Fields, PluginArgs, join

# TopoLVM's CSI driver names: the current one and the one it had before the group rename
# (clusters installed with `useLegacyName` still provision through it).
TOPOLVM_PROVISIONERS = ("topolvm.io", "topolvm.cybozu.com")


@dataclass(frozen=True)
class LvmVolumeCapacityArgs(PluginArgs):
    provisioners: tuple[str, ...] = TOPOLVM_PROVISIONERS

    @classmethod
    def decode(cls, fields: Fields) -> LvmVolumeCapacityArgs:
        path = join(fields.path, "provisioners")
        value = fields.any("provisioners")
        got: list[str] = []
        if value is None:
            got = list(TOPOLVM_PROVISIONERS)
        elif not isinstance(value, list):
            fields.errs.invalid(path, type(value).__name__, "must be a list of provisioner names")
        elif not value:
            fields.errs.required(path, "name at least one provisioner, or disable the plugin")
        for i, name in enumerate(value if isinstance(value, list) else ()):
            if not isinstance(name, str) or not name:
                fields.errs.invalid(join(path, i), name, "must be a non-empty string")
            elif name in got:
                fields.errs.duplicate(join(path, i), name)
            else:
                got.append(name)
        fields.finish()
        return cls(tuple(got) or TOPOLVM_PROVISIONERS)

    def encode(self) -> dict[str, Any]:
        return {"provisioners": list(self.provisioners)}
