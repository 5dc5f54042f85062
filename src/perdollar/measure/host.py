"""What a measurement was taken on: CPU, memory, accelerators, library versions, cloud instance.

The instance type comes from the cloud's instance metadata service, asked with a short timeout;
off a cloud (or with the service blocked) it is "unknown" after well under a second, never a hang.
``PERDOLLAR_METADATA_URL`` points every probe at one base URL (used by tests with a local server;
``off`` disables the probes).
"""

from __future__ import annotations

import functools
import os
import platform
import urllib.error
import urllib.request
from dataclasses import dataclass

import psutil

import perdollar
from perdollar.measure.result import HostFingerprint

METADATA_TIMEOUT_S = 0.3
_LINK_LOCAL = "http://169.254.169.254"


@dataclass(frozen=True, slots=True)
class _Probe:
    cloud: str
    path: str
    headers: tuple[tuple[str, str], ...] = ()
    token_path: str | None = None  # AWS IMDSv2 wants a session token first


_PROBES = (
    _Probe("aws", "/latest/meta-data/instance-type", token_path="/latest/api/token"),
    _Probe("gcp", "/computeMetadata/v1/instance/machine-type", (("Metadata-Flavor", "Google"),)),
    _Probe(
        "azure",
        "/metadata/instance/compute/vmSize?api-version=2021-02-01&format=text",
        (("Metadata", "true"),),
    ),
)


def _fetch(url: str, headers: dict[str, str], timeout: float, method: str = "GET") -> tuple[str | None, bool]:
    """(answer, reachable): an HTTP error still proves that something listens there."""
    request = urllib.request.Request(url, headers=headers, method=method)
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return response.read(4096).decode("utf-8", "replace").strip() or None, True
    except urllib.error.HTTPError:
        return None, True
    except (urllib.error.URLError, OSError, ValueError):
        return None, False


_DMI_FILES = ("sys_vendor", "product_name", "bios_vendor", "bios_version", "chassis_asset_tag")
_CLOUD_DMI_WORDS = ("amazon", "ec2", "google", "microsoft", "7783-7084-3265-9085-8269-3286-77")


def _dmi_says_not_a_cloud() -> bool:
    """True when the firmware strings exist and name no cloud: then there is nothing to ask.

    The hypervisor's DMI strings are the local hint cloud-init uses too ("Amazon EC2", "Google
    Compute Engine", Azure's asset tag); a laptop or an on-premises server skips the network probe.
    """
    texts = []
    for name in _DMI_FILES:
        try:
            with open(f"/sys/class/dmi/id/{name}", encoding="utf-8", errors="replace") as handle:
                texts.append(handle.read().lower())
        except OSError:
            continue
    if not texts:
        return False  # no firmware strings (containers, sandboxes): ask the service
    return not any(word in text for text in texts for word in _CLOUD_DMI_WORDS)


def detect_instance_type(
    base_url: str | None = None, timeout: float = METADATA_TIMEOUT_S
) -> tuple[str, str | None]:
    """(instance type, cloud) from the metadata service, or ("unknown", None)."""
    configured = base_url if base_url is not None else os.environ.get("PERDOLLAR_METADATA_URL")
    if configured is None and _dmi_says_not_a_cloud():
        return "unknown", None
    base = configured if configured is not None else _LINK_LOCAL
    if base.lower() in ("", "off", "none"):
        return "unknown", None
    base = base.rstrip("/")
    for probe in _PROBES:
        headers = dict(probe.headers)
        if probe.token_path:
            token, reachable = _fetch(
                base + probe.token_path, {"X-aws-ec2-metadata-token-ttl-seconds": "60"}, timeout, method="PUT"
            )
            if not reachable:
                break  # nothing listens: do not pay the timeout once per cloud
            if token:
                headers["X-aws-ec2-metadata-token"] = token
        answer, reachable = _fetch(base + probe.path, headers, timeout)
        if answer:
            # GCP answers "projects/123/machineTypes/a2-highgpu-1g"; keep the last part.
            return answer.rsplit("/", 1)[-1], probe.cloud
        if not reachable:
            break
    return "unknown", None


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as handle:
            for line in handle:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown"


def _versions() -> dict[str, str]:
    versions = {"python": platform.python_version(), "perdollar": perdollar.__version__}
    try:
        import torch

        versions["torch"] = torch.__version__
        if torch.version.cuda:
            versions["cuda"] = str(torch.version.cuda)
        if torch.backends.cudnn.is_available():
            versions["cudnn"] = str(torch.backends.cudnn.version())
    except ImportError:
        pass
    return versions


def _accelerator() -> tuple[str | None, int, str | None]:
    try:
        import torch
    except ImportError:
        return None, 0, None
    # device_count() does not initialise CUDA; asking torch for the name would, and a parent
    # that has initialised CUDA can no longer fork a child that uses the GPU. NVML can answer.
    count = torch.cuda.device_count() if torch.cuda.is_available() else 0
    if not count:
        return None, 0, None
    try:
        import pynvml

        pynvml.nvmlInit()
        name = pynvml.nvmlDeviceGetName(pynvml.nvmlDeviceGetHandleByIndex(0))
        driver = pynvml.nvmlSystemGetDriverVersion()
        as_text = [value.decode() if isinstance(value, bytes) else str(value) for value in (name, driver)]
        return as_text[0], count, as_text[1]
    except Exception:  # NVML is optional; torch can name the device too
        return torch.cuda.get_device_name(0), count, None


def accelerator_key(name: str | None) -> str | None:
    """The catalog's key for a device name, or None when the catalog does not know it."""
    if not name:
        return None
    try:
        from perdollar.catalog import load

        return load().accelerator(name).key
    except Exception:  # the catalog may not know a consumer GPU; the raw name is still recorded
        return None


@functools.cache
def host_fingerprint(metadata_url: str | None = None) -> HostFingerprint:
    """Describe this machine (cached: it does not change while perdollar runs)."""
    name, count, driver = _accelerator()
    instance_type, cloud = detect_instance_type(metadata_url)
    return HostFingerprint(
        cpu_model=_cpu_model(),
        cpu_cores=len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1,
        memory_gib=round(psutil.virtual_memory().total / 2**30, 1),
        accelerator=name,
        accelerator_key=accelerator_key(name),
        accelerator_count=count,
        driver=driver,
        instance_type=instance_type,
        cloud=cloud,
        versions=_versions(),
    )
