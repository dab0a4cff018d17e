"""Reference: what a CPU is, from a model string, a microarchitecture name, or the CPU's
own family, model and flags as /proc/cpuinfo shows them.

Pure tables and lookups (no triagebot imports): host scoring (reproduce.hosts) compares a host's
microarchitecture with a report's test machine's, and a host that describes itself
(rules.self_describe) names its microarchitecture from its family/model or, when a hypervisor
hides both behind a generic model name ("Intel(R) Xeon(R) Processor", "AMD EPYC"), its flags.
"""
from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass


@dataclass(frozen=True)
class Microarch:
    name: str
    vendor: str  # intel / amd / arm
    core: str  # the core design family: microarchitectures sharing it behave alike
    generation: int  # ordered within a vendor, for "how far apart"


def _table(*rows: tuple[str, str, str, int, tuple[str, ...]]) -> dict[str, Microarch]:
    table: dict[str, Microarch] = {}
    for name, vendor, core, generation, aliases in rows:
        arch = Microarch(name, vendor, core, generation)
        for key in (name, *aliases):
            table[key.lower()] = arch
    return table


_MICROARCHES = _table(
    ("Sandy Bridge", "intel", "sandy bridge", 1, ("sandybridge", "snb")),
    ("Ivy Bridge", "intel", "sandy bridge", 2, ("ivybridge", "ivb")),
    ("Haswell", "intel", "haswell", 3, ("hsw",)),
    ("Broadwell", "intel", "haswell", 4, ("bdw",)),
    ("Skylake", "intel", "skylake", 5, ("skl", "skx", "skylake-sp")),
    ("Kaby Lake", "intel", "skylake", 5, ("kabylake",)),
    ("Coffee Lake", "intel", "skylake", 5, ("coffeelake",)),
    ("Comet Lake", "intel", "skylake", 5, ("cometlake",)),
    ("Cascade Lake", "intel", "skylake", 6, ("cascadelake", "clx")),
    ("Cooper Lake", "intel", "skylake", 6, ("cooperlake", "cpx")),
    ("Ice Lake", "intel", "sunny cove", 7, ("icelake", "icx", "icl", "ice lake-sp")),
    ("Tiger Lake", "intel", "sunny cove", 7, ("tigerlake",)),
    ("Rocket Lake", "intel", "sunny cove", 7, ("rocketlake",)),
    ("Sapphire Rapids", "intel", "golden cove", 8, ("sapphirerapids", "spr")),
    ("Alder Lake", "intel", "golden cove", 8, ("alderlake", "adl")),
    ("Raptor Lake", "intel", "golden cove", 8, ("raptorlake", "rpl")),
    ("Emerald Rapids", "intel", "golden cove", 9, ("emeraldrapids", "emr")),
    ("Granite Rapids", "intel", "redwood cove", 10, ("graniterapids", "gnr")),
    ("Meteor Lake", "intel", "redwood cove", 10, ("meteorlake", "mtl")),
    ("Sierra Forest", "intel", "crestmont", 10, ("sierraforest", "srf")),
    ("Zen", "amd", "zen", 1, ("naples", "zen1")),
    ("Zen 2", "amd", "zen", 2, ("rome", "zen2")),
    ("Zen 3", "amd", "zen 3", 3, ("milan", "zen3")),
    ("Zen 4", "amd", "zen 4", 4, ("genoa", "bergamo", "zen4")),
    ("Zen 5", "amd", "zen 5", 5, ("turin", "zen5")),
    ("Neoverse N1", "arm", "neoverse n1", 1, ("ampere altra", "graviton2")),
    ("Neoverse V1", "arm", "neoverse v1", 2, ("graviton3",)),
)
# Xeon Scalable: the second digit of the model number is the generation.
_XEON_SCALABLE = re.compile(r"\b(?:Platinum|Gold|Silver|Bronze)\s+\d(\d)\d\d")
_XEON_GENERATIONS = {"1": "skylake", "2": "cascade lake", "3": "ice lake", "4": "sapphire rapids",
                     "5": "emerald rapids"}
_CORE_I = re.compile(r"\bi[3579]-(\d{4,5})")
_CORE_GENERATIONS = {"2": "sandy bridge", "3": "ivy bridge", "4": "haswell", "5": "broadwell",
                     "6": "skylake", "7": "kaby lake", "8": "coffee lake", "9": "coffee lake",
                     "10": "comet lake", "11": "tiger lake", "12": "alder lake",
                     "13": "raptor lake", "14": "raptor lake"}
_XEON_E = re.compile(r"\bE[357]-\d{4}[A-Z]?\s*v(\d)")
_XEON_E_VERSIONS = {"2": "ivy bridge", "3": "haswell", "4": "broadwell", "5": "skylake",
                    "6": "kaby lake"}
_EPYC = re.compile(r"\bEPYC\s+(\d)\d\d(\d)")
_EPYC_GENERATIONS = {("7", "1"): "zen", ("7", "2"): "zen 2", ("7", "3"): "zen 3",
                     ("9", "4"): "zen 4", ("9", "5"): "zen 5"}
_QEMU_CPU = re.compile(r"-cpu\s+([A-Za-z-]+)")


def cpu_vendor(cpu_model: str | None) -> str | None:
    """intel / amd / arm from a model string, None when it does not say."""
    if not cpu_model:
        return None
    text = cpu_model.lower()
    if "intel" in text or "xeon" in text or re.search(r"\bcore\(tm\)", text):
        return "intel"
    if "amd" in text or "epyc" in text or "ryzen" in text:
        return "amd"
    if any(word in text for word in ("arm", "ampere", "neoverse", "graviton", "aarch64")):
        return "arm"
    return None


def microarch_of(microarch: str | None, cpu_model: str | None) -> Microarch | None:
    """The microarchitecture named, or the one a well-known model number implies."""
    if microarch:
        known = _MICROARCHES.get(microarch.strip().lower())
        if known:
            return known
    if not cpu_model:
        return None
    key: str | None = None
    if match := _XEON_SCALABLE.search(cpu_model):
        key = _XEON_GENERATIONS.get(match.group(1))
    elif match := _CORE_I.search(cpu_model):
        number = match.group(1)
        key = _CORE_GENERATIONS.get(number[:2] if len(number) == 5 else number[:1])
    elif match := _XEON_E.search(cpu_model):
        key = _XEON_E_VERSIONS.get(match.group(1))
    elif match := _EPYC.search(cpu_model):
        key = _EPYC_GENERATIONS.get((match.group(1), match.group(2)))
    elif match := _QEMU_CPU.search(cpu_model):
        key = match.group(1).lower()
    return _MICROARCHES.get(key) if key else None




# --- from /proc/cpuinfo: family, model, flags ----------------------------------------------------
# (vendor_id, cpu family, model) -> microarchitecture, from the vendors' published model numbers
# (Intel's family 6 model numbers; AMD's family 17h/19h/1Ah model ranges). Hypervisors usually
# pass family and model through even when they rename the CPU.
_INTEL_MODELS = {
    42: "sandy bridge", 45: "sandy bridge", 58: "ivy bridge", 62: "ivy bridge",
    60: "haswell", 63: "haswell", 69: "haswell", 70: "haswell",
    61: "broadwell", 71: "broadwell", 79: "broadwell", 86: "broadwell",
    78: "skylake", 94: "skylake", 85: "skylake", 142: "kaby lake", 158: "coffee lake", 165: "comet lake",
    106: "ice lake", 108: "ice lake", 125: "ice lake", 126: "ice lake", 140: "tiger lake", 141: "tiger lake",
    167: "rocket lake", 151: "alder lake", 154: "alder lake", 183: "raptor lake", 186: "raptor lake",
    191: "raptor lake", 143: "sapphire rapids", 207: "emerald rapids", 173: "granite rapids",
    174: "granite rapids", 175: "sierra forest", 170: "meteor lake", 172: "meteor lake",
}
# Family 6 model 85 is Skylake-SP, Cascade Lake (stepping 5-7) or Cooper Lake (stepping 10-11).
_MODEL_85_STEPPINGS = {5: "cascade lake", 6: "cascade lake", 7: "cascade lake", 10: "cooper lake",
                       11: "cooper lake"}
# AMD: (family, first model, last model) -> microarchitecture.
_AMD_MODELS = (
    (23, 0x00, 0x2F, "zen"), (23, 0x30, 0xFF, "zen 2"),
    (25, 0x00, 0x0F, "zen 3"), (25, 0x20, 0x5F, "zen 3"), (25, 0x10, 0x1F, "zen 4"),
    (25, 0x60, 0xAF, "zen 4"), (26, 0x00, 0xFF, "zen 5"),
)
# When family and model say nothing known: the newest feature set the flags show, per vendor,
# newest first. Each row: microarchitecture and the flags it needs.
_INTEL_FLAGS = (
    ("granite rapids", ("amx_tile", "amx_fp16")),
    ("sapphire rapids", ("amx_tile", "avx512_fp16")),
    ("ice lake", ("avx512ifma", "avx512_vbmi2", "gfni", "vaes")),
    ("cooper lake", ("avx512_bf16", "avx512_vnni")),
    ("cascade lake", ("avx512_vnni",)),
    ("skylake", ("avx512f",)),
    ("alder lake", ("avx_vnni", "avx2")),
    ("broadwell", ("avx2", "adx", "rdseed")),
    ("haswell", ("avx2",)),
    ("ivy bridge", ("avx", "f16c")),
    ("sandy bridge", ("avx",)),
)
_AMD_FLAGS = (
    ("zen 5", ("avx512f", "avx512_vp2intersect")),
    ("zen 4", ("avx512f",)),
    ("zen 3", ("vaes", "vpclmulqdq")),
    ("zen 2", ("clwb", "rdpid")),
    ("zen", ("sha_ni", "clzero")),
)


def microarch_from_cpuinfo(vendor_id: str | None, family: int | None, model: int | None,
                           stepping: int | None, flags: Iterable[str]) -> Microarch | None:
    """The microarchitecture /proc/cpuinfo's vendor, family, model and flags imply, or None."""
    vendor = {"GenuineIntel": "intel", "AuthenticAMD": "amd"}.get(vendor_id or "")
    key: str | None = None
    if vendor == "intel" and family == 6 and model is not None:
        key = _MODEL_85_STEPPINGS.get(stepping or 0) if model == 85 else None
        key = key or _INTEL_MODELS.get(model)
    elif vendor == "amd" and family is not None and model is not None:
        key = next((name for row_family, low, high, name in _AMD_MODELS
                    if row_family == family and low <= model <= high), None)
    if key is None and vendor is not None:
        have = set(flags)
        rows = _INTEL_FLAGS if vendor == "intel" else _AMD_FLAGS
        key = next((name for name, needed in rows if have.issuperset(needed)), None)
    return _MICROARCHES.get(key) if key else None
