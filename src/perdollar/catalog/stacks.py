"""Which software stack runs on a chip: the hard reason a workload may not run there."""

from __future__ import annotations

from perdollar.catalog.model import SoftwareStack


def software_stack_for(vendor: str, family: str) -> SoftwareStack:
    """NVIDIA → cuda, AMD → rocm, AWS Trainium/Inferentia → neuron, TPU → xla, Gaudi → habana."""
    vendor_l, family_l = vendor.lower(), family.lower()
    if vendor_l == "nvidia":
        return "cuda"
    if vendor_l == "amd":
        return "rocm"
    if "trainium" in family_l or "inferentia" in family_l:
        return "neuron"
    if "tpu" in family_l or vendor_l == "google":
        return "xla"
    if "gaudi" in family_l or vendor_l in ("intel", "habana"):
        return "habana"
    if vendor_l == "qualcomm":
        return "qaic"
    return "cpu"
