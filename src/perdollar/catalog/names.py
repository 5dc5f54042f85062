"""Instance names taken apart and put back together, for AWS (EC2 and SageMaker), GCP and Azure.

Each cloud encodes the machine's shape in its names:

* EC2 ``g4dn.12xlarge``: family ``g``, generation ``4``, attributes ``dn`` (d = local NVMe,
  n = more network), size ``12xlarge``; SageMaker adds the prefix ``ml.`` to the same shape.
* GCP ``a2-highgpu-1g``: series ``a2`` (family ``a``, generation ``2``), attributes ``-highgpu``,
  size ``1g``; TPU slices ``tpu-v5litepod-8`` (family ``tpu``, generation ``v5``, size 8 chips or
  cores). N1 hosts with attached GPUs are written ``n1-highmem-16+4xT4``.
* Azure ``Standard_NC24ads_A100_v4``: tier ``Standard``, family ``NC``, size ``24`` (vCPUs),
  attributes ``ads_A100``, generation (version) ``v4``.

:func:`format_instance_name` is the exact inverse of :func:`parse_instance_name`.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable

from perdollar.catalog.model import Cloud, NameParts
from perdollar.errors import PerdollarError

_EC2 = re.compile(
    r"^(?:(?P<prefix>ml)\.)?(?P<family>[a-z]+)(?P<generation>\d+)?(?P<attributes>[a-z0-9-]*)"
    r"\.(?P<size>[a-z0-9-]+)$"
)
_TPU = re.compile(r"^(?P<family>tpu)-(?P<generation>v\d+)(?P<attributes>[a-z]*)-(?P<size>\d+)$")
_GCP = re.compile(
    r"^(?P<family>[a-z]+)(?P<generation>\d+)(?P<attributes>[a-z]*(?:-[a-z]+)*?)"
    r"-(?P<size>\d+g?(?:-[a-z]+)*(?:\+\d+x[A-Za-z0-9-]+)?|micro|small|medium)$"
)
_AZURE = re.compile(
    r"^(?P<prefix>Standard|Basic)_(?P<family>[A-Z]+)(?P<size>\d+(?:-\d+)?)"
    r"(?P<attributes>[a-z]*(?:_[A-Za-z0-9]+?)*?)(?:_(?P<generation>v\d+))?$"
)


def guess_cloud(name: str) -> Cloud | None:
    """The cloud whose naming scheme ``name`` follows, or None."""
    if name.lower().startswith(("standard_", "basic_")):
        return "azure"
    if "." in name:
        return "aws"
    if "-" in name:
        return "gcp"
    return None


# Tried in order; a TPU name would also match the general GCP pattern.
_PATTERNS: dict[str, tuple[re.Pattern[str], ...]] = {"aws": (_EC2,), "gcp": (_TPU, _GCP), "azure": (_AZURE,)}


def parse_instance_name(name: str, cloud: str | None = None) -> NameParts:
    """Split an instance name into prefix, family, generation, attributes and size.

    ``cloud`` is guessed from the name's shape when not given. A name that follows no scheme
    raises :class:`PerdollarError`.
    """
    text = name.strip()
    which = cloud or guess_cloud(text)
    for pattern in _PATTERNS.get(which or "", ()):
        match = pattern.match(text)
        if match:
            return NameParts(
                prefix=match.groupdict().get("prefix"),  # only EC2/SageMaker and Azure names have one
                family=match["family"],
                generation=match["generation"],
                attributes=match["attributes"],
                size=match["size"],
            )
    examples = "g4dn.12xlarge, ml.g5.4xlarge, a2-highgpu-1g, tpu-v5litepod-8 or Standard_NC24ads_A100_v4"
    raise PerdollarError(
        f"{name!r} is not an instance name perdollar can read" + (f" for cloud {cloud!r}" if cloud else ""),
        f"use a name like {examples}",
    )


def format_instance_name(parts: NameParts, cloud: str) -> str:
    """Put a parsed name back together (the inverse of :func:`parse_instance_name`)."""
    generation = parts.generation or ""
    if cloud == "aws":
        prefix = f"{parts.prefix}." if parts.prefix else ""
        return f"{prefix}{parts.family}{generation}{parts.attributes}.{parts.size}"
    if cloud == "gcp":
        if parts.family == "tpu":
            return f"tpu-{generation}{parts.attributes}-{parts.size}"
        return f"{parts.family}{generation}{parts.attributes}-{parts.size}"
    if cloud == "azure":
        version = f"_{generation}" if generation else ""
        return f"{parts.prefix}_{parts.family}{parts.size}{parts.attributes}{version}"
    raise PerdollarError(f"unknown cloud {cloud!r}", "use one of aws, gcp, azure")


def ec2_name_for_sagemaker(name: str) -> str | None:
    """``ml.g5.4xlarge`` → ``g5.4xlarge`` (SageMaker hosts run the EC2 shape); else None."""
    return name[3:] if name.lower().startswith("ml.") else None


def did_you_mean(name: str, candidates: Iterable[str], *, limit: int = 3) -> list[str]:
    """Closest candidates to ``name`` (case-insensitive), best first."""
    by_lower: dict[str, str] = {}
    for candidate in candidates:
        by_lower.setdefault(candidate.lower(), candidate)
    matches = difflib.get_close_matches(name.lower(), list(by_lower), n=limit, cutoff=0.6)
    return [by_lower[m] for m in matches]


def suggestion_text(name: str, candidates: Iterable[str]) -> str:
    close = did_you_mean(name, candidates)
    return f"did you mean {', '.join(close)}?" if close else ""
