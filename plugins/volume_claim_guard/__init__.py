"""VolumeClaimGuard pre-filter plugin."""

from plugins.volume_claim_guard.plugin import VolumeClaimGuard

__all__ = ["VolumeClaimGuard"]
