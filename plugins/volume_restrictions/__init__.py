"""VolumeRestrictions: ReadWriteOncePod conflicts and kube's legacy same-disk conflicts."""

from .plugin import VolumeRestrictions

__all__ = ["VolumeRestrictions"]
