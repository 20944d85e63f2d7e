"""VolumeRestrictions: ReadWriteOncePod conflicts and kube's legacy same-disk conflicts."""

from netsched.plugins.volume_restrictions.plugin import VolumeRestrictions

__all__ = ["VolumeRestrictions"]
