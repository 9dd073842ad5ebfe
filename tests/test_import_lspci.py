"""`tlpsim import lspci`: lspci -vvv output as a scenario, on the nine pcie-bench hosts and on
small synthetic texts."""

import tomllib
import unicodedata
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tlpsim
from tlpsim.importers.lspci import parse_lspci, parse_lspci_tree

DATA = Path(__file__).resolve().parent.parent / "data" / "pcie-bench"
HOSTS = sorted(p.name for p in DATA.iterdir() if p.is_dir())


def function(
    bdf, title, express=None, bus=None, speed=None, width=None, mps=256, mrrs=512, ext_tag=False, tag10=False
) -> str:
    """One function as `lspci -vvv` (pciutils 3.7+) prints it."""
    flag = {True: "+", False: "-"}
    lines = [f"{bdf} {title}", "\tControl: I/O- Mem+ BusMaster+ SpecCycle- MemWINV- VGASnoop- ParErr- Stepping-"]
    if bus:
        lines.append(f"\tBus: primary={bus[0]}, secondary={bus[1]}, subordinate={bus[2]}, sec-latency=0")
    if express:
        lines += [
            f"\tCapabilities: [40] Express (v2) {express}, MSI 00",
            "\t\tDevCap:\tMaxPayload 512 bytes, PhantFunc 0, Latency L0s <64ns, L1 <1us",
            f"\t\t\tExtTag{flag[ext_tag]} AttnBtn- AttnInd- PwrInd- RBE+ FLReset+ SlotPowerLimit 0W",
            "\t\tDevCtl:\tCorrErr+ NonFatalErr+ FatalErr+ UnsupReq+",
            f"\t\t\tRlxdOrd+ ExtTag{flag[ext_tag]} PhantFunc- AuxPwr- NoSnoop+ FLReset-",
            f"\t\t\tMaxPayload {mps} bytes, MaxReadReq {mrrs} bytes",
        ]
        if speed is not None:
            lines += [
                f"\t\tLnkCap:\tPort #0, Speed {speed}GT/s, Width x{width}, ASPM L1, Exit Latency L1 <64us",
                "\t\tLnkCtl:\tASPM Disabled; RCB 64 bytes, Disabled- CommClk+",
                f"\t\tLnkSta:\tSpeed {speed}GT/s (ok), Width x{width} (ok)",
                "\t\t\tTrErr- Train- SlotClk+ DLActive- BWMgmt- ABWMgmt-",
            ]
        lines += [
            "\t\tDevCap2: Completion Timeout: Range ABCD, TimeoutDis+ NROPrPrP- LTR+",
            f"\t\t\t 10BitTagComp+ 10BitTagReq{flag[tag10]} OBFF Not Supported, ExtFmt- EETLPPrefix-",
            f"\t\tDevCtl2: Completion Timeout: 50us to 50ms, TimeoutDis- LTR- 10BitTagReq{flag[tag10]} OBFF Disabled,",
        ]
    lines += ["\tCapabilities: [100 v2] Advanced Error Reporting", "\tKernel driver in use: x", ""]
    return "\n".join(lines) + "\n"


# A host bridge, a root port with a Gen4 x16 switch (two downstream ports: a Gen4 x4 NVMe drive
# with 8-bit tags, a Gen5 x8 device of no known class with 10-bit tags), an empty root port, an
# integrated endpoint and a two-function Gen2 x1 NIC.
SWITCH = "".join([
    function("00:00.0", "Host bridge: Acme Root Complex"),
    function("00:01.0", "PCI bridge: Acme Root Port 1 (prog-if 00 [Normal decode])", "Root Port (Slot+)",
             ("00", "01", "04"), 16, 16, mps=512),
    function("00:02.0", "PCI bridge: Acme Root Port 2", "Root Port (Slot+)", ("00", "05", "05"), 2.5, 0),
    function("00:03.0", "PCI bridge: Acme Root Port 3", "Root Port (Slot+)", ("00", "06", "06"), 5, 1),
    function("00:04.0", "System peripheral: Acme DMA Engine", "Root Complex Integrated Endpoint"),
    function("01:00.0", "PCI bridge: Broadcom / LSI PEX88096 (rev b0)", "Upstream Port", ("01", "02", "04"), 16, 16),
    function("02:00.0", "PCI bridge: Broadcom / LSI PEX88096", "Downstream Port (Slot+)", ("02", "03", "03"), 16, 4),
    function("02:01.0", "PCI bridge: Broadcom / LSI PEX88096", "Downstream Port (Slot+)", ("02", "04", "04"), 32, 8),
    function("03:00.0", "Non-Volatile memory controller: Samsung Electronics Co Ltd NVMe SSD Controller PM9A1",
             "Endpoint", None, 16, 4, mps=256, mrrs=512, ext_tag=True),
    function("04:00.0", "Unassigned class [ff00]: Acme Corp. Device 1234", "Endpoint", None, 32, 8,
             mps=512, mrrs=1024, ext_tag=True, tag10=True),
    function("06:00.0", "Ethernet controller: Intel Corporation I350 Gigabit Network Connection (rev 01)",
             "Endpoint", None, 5, 1, mps=128, mrrs=512),
    function("06:00.1", "Ethernet controller: Intel Corporation I350 Gigabit Network Connection (rev 01)",
             "Endpoint", None, 5, 1, mps=128, mrrs=512),
])  # fmt: skip

SWITCH_TREE = """\
-[0000:00]-+-00.0  Acme Root Complex
           +-01.0-[01-04]----00.0-[02-04]--+-00.0-[03]----00.0  Samsung Electronics Co Ltd NVMe SSD Controller PM9A1
           |                               \\-01.0-[04]----00.0  Acme Corp. Device 1234
           +-02.0-[05]--
           +-03.0-[06]--+-00.0  Intel Corporation I350 Gigabit Network Connection
           |            \\-00.1  Intel Corporation I350 Gigabit Network Connection
           \\-04.0  Acme DMA Engine
"""


def load(text: str) -> dict:
    """The scenario as TOML data, after checking that tlpsim loads it."""
    tlpsim.load_scenario(text)
    return tomllib.loads(text)


def links(doc: dict) -> dict:
    return {tuple(link["between"]): (link["gen"], link["width"]) for link in doc["link"]}


@pytest.fixture(scope="module", params=HOSTS)
def host(request):
    """(directory name, import of its sys-lspci.txt with the NFP as the device of [pcie])."""
    path = DATA / request.param / "sys-lspci.txt"
    nfp = next(f for f in parse_lspci(path.read_text()) if f.description.startswith("Netronome"))
    return request.param, tlpsim.import_lspci(path, device=nfp.bdf)


def test_nine_hosts_load_with_the_nfp_at_gen3_x8(host):
    name, result = host
    doc = load(result.scenario)
    nfp = next(e["name"] for e in doc["endpoint"] if e["name"].startswith("netronome_6000_"))
    assert links(doc)[("rc", nfp)] == (3, 8)
    assert result.focus == nfp
    # DevCtl of the NFP as lspci prints it: MPS 256 everywhere; MRRS 512 on the Haswell T630,
    # 4096 on the Broadwell T430 (checked by hand in each sys-lspci.txt).
    assert doc["pcie"]["mps"] == 256
    assert doc["pcie"]["mrrs"] == (512 if "hsw" in name else 4096)
    # Each host: a Renesas switch with a PCIe-to-PCI bridge below it, the NFP, another Gen3
    # x8 device and a two-port Gen2 x1 NIC.
    assert len(doc["switch"]) == 1 and len(doc["endpoint"]) == 4
    assert doc["workload"][0]["endpoint"] == nfp


def test_nine_hosts_default_focus_is_the_fastest_link():
    for name in HOSTS:
        doc = load(tlpsim.import_lspci(DATA / name / "sys-lspci.txt").scenario)
        # The other Gen3 x8 card has the lower address and the same MPS and MRRS as the NFP.
        assert doc["pcie"]["mps"] == 256, name
        assert doc["workload"][0]["endpoint"].endswith("_02_00_0"), name


def test_a_host_scenario_runs():
    result = tlpsim.run(tlpsim.import_lspci(DATA / HOSTS[-1] / "sys-lspci.txt").scenario)
    assert result.audit["passed"] and result.flows[0]["throughput_gbps"] > 0


def test_switch_with_two_downstream_ports():
    result = tlpsim.import_lspci(SWITCH)
    doc = load(result.scenario)
    sw = "broadcom_lsi_pex88096_01_00_0"
    nvme, acme, nic = "samsung_nvme_ssd_03_00_0", "acme_1234_04_00_0", "intel_i350_gigabit_06_00_0"
    assert [s["name"] for s in doc["switch"]] == [sw]
    assert links(doc) == {("rc", sw): (4, 16), (sw, nvme): (4, 4), (sw, acme): (5, 8), ("rc", nic): (2, 1)}
    tags = {e["name"]: e["tags"] for e in doc["endpoint"]}
    assert tags == {nvme: 256, acme: 768, nic: 32}
    assert all(e["kind"] == "dma" for e in doc["endpoint"])
    # The fastest link is the Gen5 x8 device's: its DevCtl gives [pcie].
    assert (doc["pcie"]["mps"], doc["pcie"]["mrrs"]) == (512, 1024)
    assert result.focus == acme
    text = result.scenario
    assert "# 04:00.0 Unassigned class [ff00]: Acme Corp. Device 1234" in text
    assert "# also on this link: 06:00.1 Ethernet controller" in text
    assert "00:02.0 empty slot" in text
    assert "00:04.0 System peripheral: Acme DMA Engine  [integrated endpoint]" in text
    assert "# root port 00:03.0" in text
    assert "The endpoints disagree" in text
    roles = {d["bdf"]: d["role"] for d in result.devices}
    assert roles["02:01.0"] == "switch downstream port" and roles["06:00.1"] == "other function"
    assert tlpsim.run(text).audit["passed"]


def test_device_chooses_pcie_values_and_placeholder():
    doc = load(tlpsim.import_lspci(SWITCH, device="06:00.0").scenario)
    assert (doc["pcie"]["mps"], doc["pcie"]["mrrs"]) == (128, 512)
    assert doc["workload"][0]["endpoint"] == "intel_i350_gigabit_06_00_0"
    with pytest.raises(tlpsim.ConfigError, match="--device 06:00.1: no endpoint at that address"):
        tlpsim.import_lspci(SWITCH, device="06:00.1")


@pytest.mark.parametrize(("speed", "gen"), [(2.5, 1), (5, 2), (8, 3), (16, 4), (32, 5), (64, 6)])
def test_speeds_map_to_generations(speed, gen):
    text = function("00:01.0", "PCI bridge: Root Port", "Root Port", ("00", "01", "01"), speed, 4) + function(
        "01:00.0", "Processing accelerators: Acme X", "Endpoint", None, speed, 4
    )
    assert links(load(tlpsim.import_lspci(text).scenario)) == {("rc", "acme_x_01_00_0"): (gen, 4)}


def test_link_down_and_trained_below_capability():
    text = (
        function("00:01.0", "PCI bridge: Root Port", "Root Port", ("00", "01", "01"), 8, 8)
        + function("00:02.0", "PCI bridge: Root Port", "Root Port", ("00", "02", "02"), 8, 0)
        + function("01:00.0", "Ethernet controller: Acme NIC", "Endpoint", None, 8, 8).replace(
            "Speed 8GT/s, Width x8, ASPM", "Speed 16GT/s, Width x16, ASPM"
        )
        + function("02:00.0", "Ethernet controller: Acme Other", "Endpoint", None, 2.5, 0).replace(
            "Speed 2.5GT/s (ok)", "Speed unknown"
        )
    )
    result = tlpsim.import_lspci(text)
    assert "the device can do 16GT/s x16 (LnkCap)" in result.scenario
    assert "02:00.0 Ethernet controller: Acme Other  [link down or unreadable" in result.scenario
    assert links(load(result.scenario)) == {("rc", "acme_nic_01_00_0"): (3, 8)}


def test_tree_cross_check_agrees_and_disagrees():
    assert tlpsim.import_lspci(SWITCH, tree=SWITCH_TREE).warnings == []
    assert "Cross-checked with lspci -tv: the same tree." in tlpsim.import_lspci(SWITCH, tree=SWITCH_TREE).scenario
    moved = SWITCH_TREE.replace("+-03.0-[06]--+-00.0", "+-02.0-[06]--+-00.0")
    warnings = tlpsim.import_lspci(SWITCH, tree=moved).warnings
    assert any("06:00.0 is below 00:02.0 there, below 00:03.0 by the bus numbers" in w for w in warnings)


def test_tree_parser_reads_nested_bridges():
    parents = parse_lspci_tree(SWITCH_TREE)
    assert parents[(0, 3, 0, 0)] == (0, 2, 0, 0)
    assert parents[(0, 2, 1, 0)] == (0, 1, 0, 0)
    assert parents[(0, 1, 0, 0)] == (0, 0, 1, 0)
    assert parents[(0, 6, 0, 1)] == (0, 0, 3, 0)
    assert parents[(0, 0, 4, 0)] is None
    assert len(parents) == 12


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("hello\nworld\n", "no devices found; expected the output of `lspci -vvv`"),
        ("00:00.0 Host bridge: X\n\tCapabilities: <access denied>\n", "run it as root"),
        (
            function("00:01.0", "PCI bridge: Root Port", "Root Port", ("00", "01", "01"), 8, 8).replace(
                "secondary=01", "secondary=zz"
            ),
            "<text>:3: cannot read the bridge's bus numbers",
        ),
        (
            function("00:01.0", "PCI bridge: Root Port", "Root Port", ("00", "01", "01"), 8, 8).replace(
                "LnkSta:\tSpeed 8GT/s (ok), Width x8 (ok)", "LnkSta:\tfast"
            ),
            "cannot read LnkSta 'fast",
        ),
        (function("00:00.0", "Host bridge: X"), "no device with a working PCIe link below a root port"),
        (function("00:00.0", "Host bridge: X") * 2, "00:00.0 appears again (first on line 1)"),
    ],
)
def test_bad_lspci_text_gives_one_clear_error(text, words):
    with pytest.raises(tlpsim.ImportFileError) as e:
        tlpsim.import_lspci(text)
    assert words in str(e.value) and "\n" not in str(e.value)


def test_cli_writes_a_scenario_that_runs(cli, tmp_path):
    lspci, tree = tmp_path / "lspci.txt", tmp_path / "tree.txt"
    lspci.write_text(SWITCH)
    tree.write_text(SWITCH_TREE)
    out = tmp_path / "host.toml"
    proc = cli("import", "lspci", str(lspci), "--tree", str(tree), "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "" and "wrote" in proc.stderr and "3 endpoints, 1 switch" in proc.stderr
    proc = cli("run", str(out), "--format", "json")
    assert proc.returncode == 0, proc.stderr
    stdout = cli("import", "lspci", str(lspci)).stdout
    assert stdout == out.read_text().replace("# Cross-checked with lspci -tv: the same tree.\n", "")


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["import", "lspci", "no-such-file.txt"], "no-such-file.txt: no such file"),
        (["import", "lspci", "README.md"], "README.md: no devices found"),
        (["import", "lspci", str(DATA / HOSTS[0] / "sys-lspci.txt"), "--device", "ff:00.0"], "--device ff:00.0"),
        (["import", "lspci", str(DATA / HOSTS[0] / "sys-lspci.txt"), "--tree", "README.md"], "no tree found"),
    ],
)
def test_cli_bad_input_one_line_exit_2(cli, args, words):
    proc = cli(*args)
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and words in lines[0], proc.stderr
    assert "Traceback" not in proc.stderr


ESC_NAME = Path(__file__).resolve().parent / "data" / "lspci_esc_name.txt"


def test_an_escape_in_a_device_name_imports_escaped(cli):
    # ESC in a name went into a TOML comment, which the loader refused with an empty reason.
    proc = cli("import", "lspci", str(ESC_NAME))
    assert proc.returncode == 0, proc.stderr
    assert "\x1b" not in proc.stdout + proc.stderr and "\x07" not in proc.stdout
    assert r"# 01:00.0 Ethernet controller: Evil\u{1b}[2J\u{1b}]0;pwned\u{7} Corp Widget" in proc.stdout
    tlpsim.load_scenario(proc.stdout)


@settings(max_examples=150, deadline=None)
@given(name=st.text(alphabet=st.characters(codec="utf-8"), max_size=12))
def test_any_device_name_imports_or_fails_with_a_reason(name):
    text = ESC_NAME.read_text().replace("Evil\x1b[2J\x1b]0;pwned\x07 Corp Widget", name)
    try:
        result = tlpsim.import_lspci(text)
    except tlpsim.ConfigError as e:
        message = str(e)
        assert "\n" not in message and message.rstrip().rsplit(":", 1)[-1].strip(), message
        return
    tlpsim.load_scenario(result.scenario)
    comments = [line for line in result.scenario.splitlines() if "Ethernet controller" in line]
    controls = [c for line in comments for c in line if unicodedata.category(c) in ("Cc", "Zl", "Zp")]
    assert comments and not controls
