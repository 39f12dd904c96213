"""Machine description from a fake sysfs/procfs tree."""

from locus_tools.machine import Machine, describe, format_bytes, parse_cpu_list, parse_size


def _write(path, text):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text + "\n")


def _fake_tree(root, caches):
    sys_root, proc_root = root / "sys", root / "proc"
    cpu = sys_root / "devices/system/cpu"
    _write(cpu / "online", "0-3,6")
    for i, (level, kind, size, line) in enumerate(caches):
        idx = cpu / f"cpu0/cache/index{i}"
        _write(idx / "level", str(level))
        _write(idx / "type", kind)
        _write(idx / "size", size)
        _write(idx / "coherency_line_size", str(line))
        _write(idx / "shared_cpu_list", "0")
    _write(proc_root / "cpuinfo", "processor\t: 0\nvendor_id\t: Fake\nmodel name\t: Fake CPU 9000\n")
    _write(proc_root / "sys/kernel/osrelease", "9.9.9-test")
    return sys_root, proc_root


def test_describe_reads_caches_cpus_model_kernel(tmp_path):
    sys_root, proc_root = _fake_tree(tmp_path, [
        (1, "Data", "48K", 128),
        (1, "Instruction", "32K", 128),
        (2, "Unified", "2048K", 128),
        (3, "Unified", "36M", 128),
    ])
    m = describe(sys_root, proc_root)
    assert m.cpus == 5
    assert m.model == "Fake CPU 9000"
    assert (m.l1d, m.l2, m.l3) == (48 << 10, 2 << 20, 36 << 20)
    assert m.line_size == 128
    assert m.lines(m.l1d) == 384
    assert m.kernel == "9.9.9-test"
    assert m.short() == "5 CPUs, L1d 48 KiB, L2 2 MiB"
    assert "Fake CPU 9000" in m.long() and "L3 36 MiB" in m.long() and "Linux 9.9.9-test" in m.long()


def test_instruction_cache_is_not_l1d(tmp_path):
    sys_root, proc_root = _fake_tree(tmp_path, [(1, "Instruction", "64K", 64), (1, "Data", "32K", 64)])
    assert describe(sys_root, proc_root).l1d == 32 << 10


def test_missing_caches_stay_unknown(tmp_path):
    (tmp_path / "sys").mkdir()
    (tmp_path / "proc").mkdir()
    m = describe(tmp_path / "sys", tmp_path / "proc")
    assert m.cpus >= 1
    assert m.l1d is None and m.l2 is None and m.lines(m.l2) is None
    assert m.model == "unknown CPU"
    assert "L1d" not in m.short()


def test_size_and_list_parsing():
    assert parse_size("32K") == 32768
    assert parse_size("1M") == 1 << 20
    assert parse_size("512") == 512
    assert parse_size("garbage") is None
    assert parse_cpu_list("0-1") == 2
    assert parse_cpu_list("0-3,6,8-9") == 7
    assert parse_cpu_list("x") == 0
    assert format_bytes(32768) == "32 KiB"
    assert format_bytes(1536) == "1.5 KiB"
    assert Machine(cpus=1).short() == "1 CPU"


def test_this_machine_has_a_description(machine):
    assert machine.cpus >= 1
    assert machine.line_size > 0
