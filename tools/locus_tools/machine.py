"""What this machine is: CPUs, model, cache sizes, kernel.

Every figure is titled with the machine it was measured on, and the seed000 figures place
their markers at this machine's L1d and L2 capacity, so the description is read from sysfs
and procfs rather than assumed. The roots are parameters so that tests can point them at a
fake tree.
"""

import os
import platform
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional


@dataclass
class Machine:
    cpus: int
    model: str = "unknown CPU"
    line_size: int = 64
    l1d: Optional[int] = None  # bytes, per core
    l2: Optional[int] = None
    l3: Optional[int] = None
    kernel: str = ""
    caches: list = field(default_factory=list)  # (level, type, bytes, shared_cpu_list)

    def lines(self, size_bytes):
        """How many cache lines of this machine fit in size_bytes (None stays None)."""
        if size_bytes is None:
            return None
        return size_bytes // self.line_size

    def short(self):
        """One line for a figure title: '2 CPUs, L1d 32 KiB, L2 1 MiB'."""
        parts = [f"{self.cpus} CPU" + ("s" if self.cpus != 1 else "")]
        for name, size in (("L1d", self.l1d), ("L2", self.l2)):
            if size:
                parts.append(f"{name} {format_bytes(size)}")
        return ", ".join(parts)

    def long(self):
        """One line for a report: model, CPUs, every cache level, line size, kernel."""
        parts = [f"{self.model}", f"{self.cpus} CPU" + ("s" if self.cpus != 1 else "")]
        for name, size in (("L1d", self.l1d), ("L2", self.l2), ("L3", self.l3)):
            if size:
                parts.append(f"{name} {format_bytes(size)}")
        parts.append(f"{self.line_size}-byte lines")
        if self.kernel:
            parts.append(f"Linux {self.kernel}")
        return ", ".join(parts)

    def as_dict(self):
        return {
            "cpus": self.cpus,
            "model": self.model,
            "line_size": self.line_size,
            "l1d": self.l1d,
            "l2": self.l2,
            "l3": self.l3,
            "kernel": self.kernel,
        }


def format_bytes(n):
    """1024 -> '1 KiB', 1048576 -> '1 MiB', 1536 -> '1.5 KiB'."""
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= scale:
            v = n / scale
            return f"{v:.0f} {unit}" if v == int(v) else f"{v:.1f} {unit}"
    return f"{n} B"


def parse_size(text):
    """sysfs cache sizes look like '32K', '1024K', '32768K' or '1M'; returns bytes or None."""
    m = re.fullmatch(r"\s*(\d+)\s*([KMG]?)i?B?\s*", text or "", re.IGNORECASE)
    if not m:
        return None
    scale = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30}[m.group(2).upper()]
    return int(m.group(1)) * scale


def parse_cpu_list(text):
    """'0-1,4,6-7' -> 5; the count of CPUs in a sysfs CPU list (0 if unreadable)."""
    count = 0
    for part in (text or "").strip().split(","):
        if not part:
            continue
        if "-" in part:
            lo, hi = part.split("-", 1)
            if not (lo.isdigit() and hi.isdigit()):
                return 0
            count += int(hi) - int(lo) + 1
        elif part.isdigit():
            count += 1
        else:
            return 0
    return count


def _read(path):
    try:
        return Path(path).read_text().strip()
    except OSError:
        return None


def describe(sys_root="/sys", proc_root="/proc"):
    """Reads the machine description; anything missing is left unknown rather than guessed."""
    cpu_dir = Path(sys_root) / "devices/system/cpu"
    cpus = parse_cpu_list(_read(cpu_dir / "online")) or os.cpu_count() or 1

    model = "unknown CPU"
    cpuinfo = _read(Path(proc_root) / "cpuinfo") or ""
    for line in cpuinfo.splitlines():
        key, _, value = line.partition(":")
        if key.strip() in ("model name", "Model", "cpu model") and value.strip():
            model = value.strip()
            break

    machine = Machine(cpus=cpus, model=model)
    cache_dir = cpu_dir / "cpu0/cache"
    indexes = sorted(cache_dir.glob("index*")) if cache_dir.is_dir() else []
    line_sizes = []
    for idx in indexes:
        level = _read(idx / "level")
        kind = _read(idx / "type") or ""
        size = parse_size(_read(idx / "size"))
        line = _read(idx / "coherency_line_size")
        shared = _read(idx / "shared_cpu_list") or ""
        if not (level and level.isdigit()) or size is None:
            continue
        machine.caches.append((int(level), kind, size, shared))
        if line and line.isdigit():
            line_sizes.append(int(line))
        if kind == "Instruction":
            continue
        if level == "1" and kind in ("Data", "Unified"):
            machine.l1d = size
        elif level == "2":
            machine.l2 = size
        elif level == "3":
            machine.l3 = size
    if line_sizes:
        machine.line_size = line_sizes[0]
    machine.kernel = _read(Path(proc_root) / "sys/kernel/osrelease") or (
        platform.release() if str(proc_root) == "/proc" else ""
    )
    return machine
