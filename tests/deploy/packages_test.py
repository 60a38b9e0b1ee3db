#!/usr/bin/env python3
"""The Debian packages (deploy/packaging): build, lint, install, upgrade, remove, purge.

- CPack builds picket-sensor, picket-manager and picketctl from the configured build directory
  into a temporary directory, then a newer picket-sensor (cpack -D PICKET_PACKAGE_VERSION=...).
- Every file of each package with its mode and owner, nothing else; the conffiles; stripped
  binaries that run; units with /usr/bin paths; man pages (gzip -9n); changelog and copyright;
  Depends covering every shared library the binaries load (dpkg-shlibdeps); the bash
  completion's tables equal picketctl's real command tree, and completing works.
- lintian reports no error (its warnings are printed).
- In a throwaway root (a private mount namespace with an overlayfs over /, chroot): dpkg -i
  runs the real maintainer scripts: the picket user, /var/lib/picket and /var/log/picket
  picket:picket 0750, the conffiles dpkg lists, systemd-analyze verify of the installed units;
  an edit of /etc/picket/sensor.yaml survives the upgrade; dpkg -r keeps conffiles and state,
  dpkg -P removes them. Without the privileges for the overlay, that part prints that it was
  skipped and the maintainer scripts are checked by content only.
- In that root, deploy/README.md "Install from packages" with TLS and bootstrap enrollment, as
  far as a root without systemd allows: the manager host's PKI, admin token, file modes and
  tls.ca-key in the installed manager.yaml; the installed units' ExecStart, expanded as
  systemd would with the guide's sensor.env, run as user picket (setpriv), the sensor replaying
  a pcap instead of capturing; the sensor enrolls (its key 0600 picket in its state directory,
  a certificate for its name) and picketctl lists it connected. The CA key with the mode of a
  key the manager does not need (root 0600) stops the manager.

Usage: packages_test.py --source SOURCE_DIR --build BUILD_DIR
"""
import gzip
import json
import os
import re
import shlex
import shutil
import signal
import socket
import ssl
import struct
import subprocess
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
import picket_e2e  # noqa: E402
import picket_test  # noqa: E402

SOURCE = None
BUILD = None

# The files of each package: path -> mode; all owned root:root, directories 0755.
EXPECTED = {
    "picket-sensor": {
        "/etc/logrotate.d/picket-sensor": 0o644,
        "/etc/picket/sensor.yaml": 0o644,
        "/lib/systemd/system/picket-sensor@.service": 0o644,
        "/usr/bin/picket-sensor": 0o755,
        "/usr/share/doc/picket-sensor/changelog.Debian.gz": 0o644,
        "/usr/share/doc/picket-sensor/copyright": 0o644,
        "/usr/share/doc/picket-sensor/examples/picket-sensor.env": 0o644,
        "/usr/share/doc/picket-sensor/examples/profile-ladder.yaml": 0o644,
        "/usr/share/lintian/overrides/picket-sensor": 0o644,
        "/usr/share/man/man8/picket-sensor.8.gz": 0o644,
    },
    "picket-manager": {
        "/etc/picket/manager.yaml": 0o644,
        "/lib/systemd/system/picket-manager.service": 0o644,
        "/usr/bin/picket-manager": 0o755,
        "/usr/share/doc/picket-manager/changelog.Debian.gz": 0o644,
        "/usr/share/doc/picket-manager/copyright": 0o644,
        "/usr/share/lintian/overrides/picket-manager": 0o644,
        "/usr/share/man/man8/picket-manager.8.gz": 0o644,
    },
    "picketctl": {
        "/usr/bin/picketctl": 0o755,
        "/usr/share/bash-completion/completions/picketctl": 0o644,
        "/usr/share/doc/picketctl/changelog.Debian.gz": 0o644,
        "/usr/share/doc/picketctl/copyright": 0o644,
        "/usr/share/lintian/overrides/picketctl": 0o644,
        "/usr/share/man/man1/picketctl.1.gz": 0o644,
    },
}
CONFFILES = {
    "picket-sensor": {"/etc/picket/sensor.yaml", "/etc/logrotate.d/picket-sensor"},
    "picket-manager": {"/etc/picket/manager.yaml"},
    "picketctl": set(),
}
# /etc files that are copies of deploy/ files.
ETC_SOURCES = {
    "/etc/picket/sensor.yaml": "deploy/sensor.yaml",
    "/etc/picket/manager.yaml": "deploy/manager.yaml",
    "/etc/logrotate.d/picket-sensor": "deploy/logrotate/picket-sensor",
    "/usr/share/doc/picket-sensor/examples/picket-sensor.env": "deploy/systemd/picket-sensor.env",
}
UNITS = {"picket-sensor": "picket-sensor@.service", "picket-manager": "picket-manager.service"}
BINARY = {"picket-sensor": "picket-sensor", "picket-manager": "picket-manager",
          "picketctl": "picketctl"}
MAN = {"picket-sensor": ("picket-sensor", "8"), "picket-manager": ("picket-manager", "8"),
       "picketctl": ("picketctl", "1")}
SCRIPTS = {"picket-sensor": {"postinst", "prerm", "postrm"},
           "picket-manager": {"postinst", "prerm", "postrm"}, "picketctl": set()}

WORK = None      # temporary directory of the whole run
DEBS = {}        # package -> .deb of the first build
UPGRADE = None   # the newer picket-sensor .deb
EXTRACTED = {}   # package -> directory the .deb was unpacked into
VERSION = None


def slurp(path, binary=False):
    with open(path, "rb" if binary else "r") as f:
        return f.read()


def run(args, timeout=120, check=True, **kw):
    r = subprocess.run(args, capture_output=True, text=True, timeout=timeout, **kw)
    if check and r.returncode != 0:
        raise AssertionError("%s exited %d\nstdout:\n%s\nstderr:\n%s"
                             % (" ".join(args), r.returncode, r.stdout, r.stderr))
    return r


def cpack(outdir, *defs):
    t = time.monotonic()
    run(["cpack", "--config", os.path.join(BUILD, "CPackConfig.cmake"), "-B", outdir] +
        [a for d in defs for a in ("-D", d)], timeout=300, cwd=BUILD)
    debs = {}
    for f in os.listdir(outdir):
        if f.endswith(".deb"):
            debs[f.split("_", 1)[0]] = os.path.join(outdir, f)
    print("cpack %s: %s in %.0f s" % (" ".join(defs) or "(defaults)", sorted(debs),
                                      time.monotonic() - t), flush=True)
    return debs


def deb_field(deb, field):
    return run(["dpkg-deb", "-f", deb, field]).stdout.strip()


def deb_listing(deb):
    """{path: (type, mode, owner)} from dpkg-deb -c ('/etc/x', not './etc/x/')."""
    out = {}
    for line in run(["dpkg-deb", "-c", deb]).stdout.splitlines():
        m = re.match(r"^([-dlhcbps])([rwxsStT-]{9}) (\S+)/(\S+)\s+\d+ \S+ \S+ \.(/.*?)/?$", line)
        assert m, "unexpected dpkg-deb -c line: %r" % line
        kind, perms, owner, group, path = m.groups()
        mode = 0
        for i, c in enumerate(perms):
            if c != "-":
                mode |= 1 << (8 - i)
        out[path or "/"] = (kind, mode, owner + ":" + group)
    return out


def setUpModule():
    global WORK, DEBS, UPGRADE, VERSION
    for tool in ("cpack", "dpkg-deb", "dpkg-shlibdeps", "readelf"):
        if not shutil.which(tool):
            raise unittest.SkipTest(tool + " is not installed (deploy/install-deps.sh)")
    if not os.path.exists(os.path.join(BUILD, "CPackConfig.cmake")):
        raise unittest.SkipTest("%s has no CPackConfig.cmake: configured without help2man or "
                                "dpkg-dev (deploy/install-deps.sh installs them)" % BUILD)
    for b in ("sensor/picket-sensor", "manager/picket-manager", "manager/cli/picketctl"):
        if not os.access(os.path.join(BUILD, b), os.X_OK):
            raise unittest.SkipTest("%s is not built" % os.path.join(BUILD, b))
    WORK = tempfile.mkdtemp(prefix="picket-packages-")
    DEBS = cpack(os.path.join(WORK, "v1"))
    assert sorted(DEBS) == sorted(EXPECTED), "cpack built %s" % sorted(DEBS)
    VERSION = deb_field(DEBS["picket-sensor"], "Version")
    upstream = VERSION.rsplit("-", 1)[0]
    newer = cpack(os.path.join(WORK, "v2"), "PICKET_PACKAGE_VERSION=%s+up1" % upstream,
                  "CPACK_COMPONENTS_ALL=sensor")
    assert sorted(newer) == ["picket-sensor"], "upgrade cpack built %s" % sorted(newer)
    UPGRADE = newer["picket-sensor"]
    for pkg, deb in DEBS.items():
        d = os.path.join(WORK, "x", pkg)
        os.makedirs(d)
        run(["dpkg-deb", "-x", deb, d])
        run(["dpkg-deb", "-e", deb, os.path.join(d, "DEBIAN")])
        EXTRACTED[pkg] = d


def tearDownModule():
    if WORK:
        shutil.rmtree(WORK, ignore_errors=True)


def extracted(pkg, path):
    return os.path.join(EXTRACTED[pkg], path.lstrip("/"))


class Contents(unittest.TestCase):
    def test_versions(self):
        self.assertEqual(run(["dpkg", "--compare-versions", deb_field(UPGRADE, "Version"),
                              "gt", VERSION], check=False).returncode, 0)
        project = re.search(r"project\(picket VERSION (\S+)", slurp(
            os.path.join(SOURCE, "CMakeLists.txt"))).group(1)
        for pkg, deb in DEBS.items():
            self.assertEqual(deb_field(deb, "Version"), project + "-1", pkg)
            self.assertEqual(deb_field(deb, "Package"), pkg)
            self.assertEqual(os.path.basename(deb), "%s_%s-1_%s.deb" % (
                pkg, project, deb_field(deb, "Architecture")))

    def test_files_modes_owners(self):
        for pkg, deb in DEBS.items():
            listing = deb_listing(deb)
            files = {p: v for p, v in listing.items() if v[0] != "d"}
            self.assertEqual(sorted(files), sorted(EXPECTED[pkg]), pkg + ": files")
            for path, (kind, mode, owner) in listing.items():
                want = 0o755 if kind == "d" else EXPECTED[pkg][path]
                self.assertEqual((kind in "d-", oct(mode), owner), (True, oct(want), "root:root"),
                                 "%s: %s" % (pkg, path))

    def test_control(self):
        for pkg in DEBS:
            ctl = os.path.join(EXTRACTED[pkg], "DEBIAN")
            scripts = {f for f in os.listdir(ctl) if f in ("preinst", "postinst", "prerm",
                                                            "postrm", "config")}
            self.assertEqual(scripts, SCRIPTS[pkg], pkg)
            for s in scripts:
                self.assertEqual(oct(os.stat(os.path.join(ctl, s)).st_mode & 0o777), "0o755")
                run(["sh", "-n", os.path.join(ctl, s)])
            conffiles = os.path.join(ctl, "conffiles")
            listed = set(slurp(conffiles).split()) if os.path.exists(conffiles) else set()
            self.assertEqual(listed, CONFFILES[pkg], pkg)
            control = slurp(os.path.join(ctl, "control"))
            self.assertRegex(control, r"(?m)^Maintainer: .+ <[^@ ]+@[^> ]+>$")
            self.assertRegex(control, r"(?m)^Section: net$")
            self.assertRegex(control, r"(?m)^Description: \S.*\n [^\n]+")

    def test_depends_cover_every_library(self):
        # dpkg-shlibdeps must have run: each library the binary loads comes from a package
        # that Depends names (adduser is the daemons' only hand-written one).
        for pkg, deb in DEBS.items():
            depends = {d.strip().split()[0] for d in deb_field(deb, "Depends").split(",")}
            self.assertEqual("adduser" in depends, pkg != "picketctl", pkg)
            self.assertIn("libc6", depends, pkg)
            binary = extracted(pkg, "/usr/bin/" + BINARY[pkg])
            # The libraries it links directly (NEEDED), where the dynamic loader finds them.
            needed = re.findall(r"\(NEEDED\)\s+Shared library: \[(\S+)\]",
                                run(["readelf", "-d", "-W", binary]).stdout)
            where = dict(re.findall(r"^\s*(\S+) => (/\S+) \(", run(["ldd", binary]).stdout,
                                    re.M))
            self.assertGreater(len(needed), 3, pkg)
            self.assertEqual([n for n in needed if n not in where and not n.startswith("ld-")],
                             [], pkg + ": NEEDED libraries ldd does not resolve")
            libs = [where[n] for n in needed if n in where]
            owners = set()
            for lib in libs:
                real = os.path.realpath(lib)
                cands = {lib, real, "/usr" + lib if not lib.startswith("/usr") else lib[4:],
                         "/usr" + real if not real.startswith("/usr") else real[4:]}
                r = run(["dpkg", "-S"] + sorted(cands), check=False)
                found = {line.split(":", 1)[0].split(",")[0].strip()
                         for line in r.stdout.splitlines() if ": " in line}
                self.assertTrue(found, "%s: no package owns %s" % (pkg, lib))
                owners |= {f.split(":")[0] for f in found}
            self.assertEqual(owners - depends, set(), pkg + ": libraries' packages not in Depends")

    def test_binaries_stripped_and_run(self):
        for pkg in DEBS:
            binary = extracted(pkg, "/usr/bin/" + BINARY[pkg])
            sections = run(["readelf", "-S", "-W", binary]).stdout
            self.assertNotIn(".symtab", sections, pkg + ": not stripped")
            self.assertNotIn(".debug_info", sections, pkg)
            r = run([binary, "--help"])
            self.assertIn("Usage:", r.stdout, pkg)
        for pkg in ("picket-sensor", "picket-manager"):
            r = run([extracted(pkg, "/usr/bin/" + BINARY[pkg]), "--version"])
            self.assertEqual(r.stdout.strip(), "%s %s" % (BINARY[pkg], VERSION.rsplit("-", 1)[0]))

    def test_units(self):
        for pkg, unit in UNITS.items():
            text = slurp(extracted(pkg, "/lib/systemd/system/" + unit))
            self.assertNotIn("/usr/local", text, unit)
            source = slurp(os.path.join(SOURCE, "deploy", "systemd", unit))
            # The packaged unit is the deploy/ one with /usr/bin for /usr/local/bin and a
            # Documentation= line (systemd-analyze verify below checks the man page exists).
            want = re.sub(r"(\nDescription=.*\n)", r"\1Documentation=man:%s(8)\n" % BINARY[pkg],
                          source.replace("/usr/local/bin/", "/usr/bin/"))
            self.assertIn(want, text, unit)
            self.assertRegex(text, r"(?m)^ExecStart=/usr/bin/%s " % BINARY[pkg])
            self.assertRegex(text, r"(?m)^Documentation=man:%s\(8\)$" % BINARY[pkg])

    def test_etc_files_are_the_deploy_files(self):
        for pkg in DEBS:
            for path, src in ETC_SOURCES.items():
                if path in EXPECTED[pkg]:
                    self.assertEqual(slurp(extracted(pkg, path), True),
                                     slurp(os.path.join(SOURCE, src), True), path)

    def test_gzip_files(self):
        for pkg in DEBS:
            name, sec = MAN[pkg]
            for path in ("/usr/share/man/man%s/%s.%s.gz" % (sec, name, sec),
                         "/usr/share/doc/%s/changelog.Debian.gz" % pkg):
                raw = slurp(extracted(pkg, path), True)
                # gzip -9n: no name, no time stamp, best compression.
                self.assertEqual(raw[:3], b"\x1f\x8b\x08", path)
                self.assertEqual(raw[3] & 0x08, 0, path + ": has a file name")
                self.assertEqual(raw[4:8], b"\0\0\0\0", path + ": has a time stamp")
                self.assertEqual(raw[8], 2, path + ": not gzip -9")
            page = gzip.decompress(slurp(extracted(
                pkg, "/usr/share/man/man%s/%s.%s.gz" % (sec, name, sec)), True)).decode()
            self.assertRegex(page, r'(?m)^\.TH %s "%s" ' % (name.upper(), sec))
            self.assertIn(".SH SYNOPSIS", page)
            self.assertIn(".SH OPTIONS", page)
            self.assertRegex(page, r'(?m)^\.SH "SEE ALSO"$')
            changelog = gzip.decompress(slurp(extracted(
                pkg, "/usr/share/doc/%s/changelog.Debian.gz" % pkg), True)).decode()
            self.assertRegex(changelog.split("\n")[0],
                             r"^picket \(%s\) unstable; urgency=medium$" % re.escape(VERSION))
            self.assertRegex(changelog, r"(?m)^ -- .+ <.+>  \w{3}, \d\d \w{3} \d{4} "
                                        r"\d\d:\d\d:\d\d \+0000$")
            copyright_ = slurp(extracted(pkg, "/usr/share/doc/%s/copyright" % pkg))
            self.assertTrue(copyright_.startswith(
                "Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/\n"))
        page = gzip.decompress(slurp(extracted(
            "picketctl", "/usr/share/man/man1/picketctl.1.gz"), True)).decode()
        for cmd in help_tree()[""]["commands"]:
            self.assertIn(cmd, page, "picketctl(1) does not mention " + cmd)

    def test_maintainer_scripts_by_content(self):
        # What the install part below checks by running them; checked here too so that a host
        # without the privileges for it still checks something of them.
        for pkg in ("picket-sensor", "picket-manager"):
            ctl = os.path.join(EXTRACTED[pkg], "DEBIAN")
            postinst = slurp(os.path.join(ctl, "postinst"))
            postrm = slurp(os.path.join(ctl, "postrm"))
            self.assertIn("adduser --system", postinst)
            self.assertRegex(postinst, r"for dir in /var/lib/picket /var/log/picket; do")
            self.assertIn('install -d -o picket -g picket -m 0750 "$dir"', postinst)
            self.assertRegex(postrm, r"(?s)purge\)\n.*rmdir --ignore-fail-on-non-empty")
            self.assertNotRegex(postrm, r"deluser|delgroup", pkg + ": the user must stay")
        self.assertIn("rm -rf /var/lib/picket/sensor-*", slurp(
            os.path.join(EXTRACTED["picket-sensor"], "DEBIAN", "postrm")))
        self.assertIn("rm -f /var/lib/picket/manager.db", slurp(
            os.path.join(EXTRACTED["picket-manager"], "DEBIAN", "postrm")))


HELP_TREE = None


def help_tree():
    """{command path: {"commands": [...], "options": [...]}} from picketctl's --help."""
    global HELP_TREE
    if HELP_TREE is not None:
        return HELP_TREE
    binary = extracted("picketctl", "/usr/bin/picketctl")
    tree = {}
    todo = [""]
    while todo:
        path = todo.pop()
        out = run([binary] + path.split() + ["--help"]).stdout
        commands, options, section = [], [], None
        for line in out.splitlines():
            if re.match(r"^\S.*:$", line):
                section = line[:-1]
                continue
            if section == "Options":
                m = re.match(r"^  (-\S+)", line)
                if m:
                    options.extend(n for n in m.group(1).split(",") if n.startswith("-"))
            elif section == "Subcommands":
                m = re.match(r"^  (\S+)", line)
                if m:
                    commands.append(m.group(1))
        tree[path] = {"commands": commands, "options": options}
        todo.extend((path + " " + c).strip() for c in commands)
    HELP_TREE = tree
    return tree


def completion_tables():
    f = extracted("picketctl", "/usr/share/bash-completion/completions/picketctl")
    script = ('complete() { :; }; source "$1"; '
              'for k in "${!_picketctl_commands[@]}"; do printf "C\\t%s\\t%s\\n" "$k" '
              '"${_picketctl_commands[$k]}"; done; '
              'for k in "${!_picketctl_options[@]}"; do printf "O\\t%s\\t%s\\n" "$k" '
              '"${_picketctl_options[$k]}"; done')
    out = run(["bash", "-c", script, "bash", f]).stdout
    commands, options = {}, {}
    for line in out.splitlines():
        kind, key, value = line.split("\t")
        (commands if kind == "C" else options)[key] = sorted(value.split())
    return commands, options


class Completion(unittest.TestCase):
    maxDiff = None

    def test_tables_match_help(self):
        tree = help_tree()
        commands, options = completion_tables()
        # The completion's key of the top level is "picketctl" (bash has no empty keys).
        want_commands = {p or "picketctl": sorted(v["commands"]) for p, v in tree.items()
                         if v["commands"]}
        self.assertEqual(commands, want_commands)
        # -h/--help of every command is completed from the top level's list.
        want_options = {p: sorted(set(v["options"]) - {"-h", "--help"})
                        for p, v in tree.items() if p and set(v["options"]) - {"-h", "--help"}}
        want_options["picketctl"] = sorted(tree[""]["options"])
        self.assertEqual(options, want_options)

    def test_completing(self):
        lib = "/usr/share/bash-completion/bash_completion"
        if not os.path.exists(lib):
            print("SKIP: %s: bash-completion is not installed" % self.id(), flush=True)
            self.skipTest("bash-completion not installed")
        f = extracted("picketctl", "/usr/share/bash-completion/completions/picketctl")

        def complete(line):
            words = line.split(" ")
            script = ('source %s; source "$1"; shift; COMP_WORDS=("$@"); '
                      'COMP_CWORD=$(($# - 1)); COMP_LINE="$*"; COMP_POINT=${#COMP_LINE}; '
                      '_picketctl picketctl "${COMP_WORDS[-1]}" "${COMP_WORDS[-2]}"; '
                      'printf "%%s\\n" "${COMPREPLY[@]}"' % lib)
            out = run(["bash", "-c", script, "bash", f] + words).stdout
            return sorted(w for w in out.split("\n") if w)

        self.assertEqual(complete("picketctl ru"), ["rules"])
        self.assertEqual(complete("picketctl rules so"), ["source"])
        self.assertEqual(complete("picketctl --json rules source "),
                         ["add", "disable", "enable", "list", "remove"])
        self.assertEqual(complete("picketctl pki issue /tmp --kind s"), ["sensor"])
        self.assertEqual(complete("picketctl deploy 3 --can"), ["--canary"])
        self.assertEqual(complete("picketctl --manager sensors x"), [])
        self.assertIn("--token-file", complete("picketctl bundle list --t"))


class Lintian(unittest.TestCase):
    def test_no_errors(self):
        if not shutil.which("lintian"):
            print("SKIP: %s: lintian is not installed" % self.id(), flush=True)
            self.skipTest("lintian not installed")
        t = time.monotonic()
        r = run(["lintian", "--fail-on", "error"] + sorted(DEBS.values()), timeout=300,
                check=False)
        tags = [line for line in r.stdout.splitlines() if re.match(r"^[EWIPXO]: ", line)]
        print("lintian (%.0f s):\n  %s" % (time.monotonic() - t, "\n  ".join(tags) or "clean"),
              flush=True)
        errors = [line for line in tags if line.startswith("E: ")]
        self.assertEqual(errors, [])
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)


class Root:
    """A throwaway root: a private mount namespace (held by a sleep process) with an overlayfs
    over / whose upper layer is a tmpfs, proc, /dev bound, and fresh /run and /tmp. Commands
    enter it with nsenter + chroot; files are read through /proc/PID/root."""

    def __init__(self):
        self.dir = tempfile.mkdtemp(prefix="picket-root-", dir=WORK)
        self.proc = subprocess.Popen(["unshare", "-m", "--propagation", "private", "sleep",
                                      "600"])
        self.root = os.path.join(self.dir, "merged")
        d = self.dir
        setup = ("mount -t tmpfs -o mode=0755 tmpfs {d} && mkdir {d}/upper {d}/work {d}/merged && "
                 "mount -t overlay overlay -o lowerdir=/,upperdir={d}/upper,workdir={d}/work "
                 "{d}/merged && mount -t proc proc {d}/merged/proc && "
                 "mount --bind /dev {d}/merged/dev && mount -t tmpfs tmpfs {d}/merged/run && "
                 "mount -t tmpfs tmpfs {d}/merged/tmp").format(d=d)
        self.error = None
        # nsenter must not run before unshare did: it would mount in this namespace.
        mine = os.readlink("/proc/self/ns/mnt")
        deadline = time.monotonic() + 10
        while True:
            try:
                theirs = os.readlink("/proc/%d/ns/mnt" % self.proc.pid)
            except OSError:
                theirs = mine
            if theirs != mine or self.proc.poll() is not None or time.monotonic() > deadline:
                break
            time.sleep(0.05)
        if theirs == mine:
            self.error = "unshare -m did not give the process its own mount namespace (%s)" % (
                "it exited %s" % self.proc.returncode if self.proc.poll() is not None
                else "timeout")
            return
        r = subprocess.run(["nsenter", "-t", str(self.proc.pid), "-m", "sh", "-c", setup],
                           capture_output=True, text=True, timeout=60)
        if r.returncode != 0:
            self.error = (r.stderr or r.stdout).strip()

    def path(self, p):
        return "/proc/%d/root%s/%s" % (self.proc.pid, self.root, p.lstrip("/"))

    def run(self, args, check=True, timeout=180):
        env = {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "DEBIAN_FRONTEND": "noninteractive",
               "LANG": "C"}
        return run(["nsenter", "-t", str(self.proc.pid), "-m", "chroot", self.root] + args,
                   check=check, timeout=timeout, env=env, stdin=subprocess.DEVNULL)

    def popen(self, args, log):
        """A long-running process in the root, stderr and stdout to the host file `log`."""
        env = {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "LANG": "C"}
        with open(log, "w") as f:
            # nsenter (mount namespace only), chroot and setpriv exec: the pid is the program's.
            return subprocess.Popen(["nsenter", "-t", str(self.proc.pid), "-m", "chroot",
                                     self.root] + args, stdout=f, stderr=subprocess.STDOUT,
                                    stdin=subprocess.DEVNULL, env=env)

    def close(self):
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()


class Install(unittest.TestCase):
    def test_install_upgrade_remove_purge(self):
        reason = None
        if os.geteuid() != 0:
            reason = "not root"
        elif not shutil.which("unshare") or not shutil.which("nsenter"):
            reason = "unshare/nsenter (util-linux) not installed"
        root = None
        if reason is None:
            root = Root()
            if root.error:
                reason = "cannot mount the overlay root: " + root.error
                root.close()
        if reason:
            # The brief of this suite: without the privileges, the install part is reported
            # skipped and the maintainer scripts are checked by content (test_maintainer_...).
            print("INSTALL PART SKIPPED: %s; packages checked by content only" % reason,
                  flush=True)
            return
        try:
            self.scenario(root)
        finally:
            root.close()

    def stat(self, root, path):
        return os.lstat(root.path(path))

    def owner(self, root, st):
        users = {int(l.split(":")[2]): l.split(":")[0]
                 for l in slurp(root.path("/etc/passwd")).splitlines() if l}
        groups = {int(l.split(":")[2]): l.split(":")[0]
                  for l in slurp(root.path("/etc/group")).splitlines() if l}
        return "%s:%s" % (users.get(st.st_uid, st.st_uid), groups.get(st.st_gid, st.st_gid))

    def status(self, root, pkg):
        r = root.run(["dpkg-query", "-W", "-f", "${Status} ${Version}", pkg], check=False)
        return r.stdout.strip() if r.returncode == 0 else "not-installed"

    def check_dir(self, root, path, mode, owner):
        st = self.stat(root, path)
        self.assertTrue(os.path.isdir(root.path(path)), path)
        self.assertEqual((oct(st.st_mode & 0o7777), self.owner(root, st)), (oct(mode), owner),
                         path)

    def scenario(self, root):
        for pkg in EXPECTED:
            self.assertEqual(self.status(root, pkg), "not-installed",
                             "%s is installed on this host: the test needs a host without it"
                             % pkg)
        os.makedirs(root.path("/tmp/debs"))
        for pkg, deb in list(DEBS.items()) + [("upgrade", UPGRADE)]:
            shutil.copy(deb, root.path("/tmp/debs/%s.deb" % pkg))
        r = root.run(["dpkg", "-i", "/tmp/debs/picket-sensor.deb", "/tmp/debs/picket-manager.deb",
                      "/tmp/debs/picketctl.deb"])
        print("dpkg -i:\n" + r.stdout + r.stderr, flush=True)

        # Every file as packaged; the user; the directories; the conffiles dpkg recorded.
        for pkg, files in EXPECTED.items():
            self.assertEqual(self.status(root, pkg), "install ok installed " + VERSION)
            for path, mode in files.items():
                st = self.stat(root, path)
                self.assertEqual((oct(st.st_mode & 0o7777), self.owner(root, st)),
                                 (oct(mode), "root:root"), path)
            r = root.run(["dpkg-query", "-W", "-f", "${Conffiles}", pkg])
            listed = {line.split()[0] for line in r.stdout.splitlines() if line.strip()}
            self.assertEqual(listed, CONFFILES[pkg], pkg)
        passwd = root.run(["getent", "passwd", "picket"]).stdout.strip().split(":")
        self.assertEqual(passwd[0], "picket")
        self.assertLess(int(passwd[2]), 1000, "picket is not a system user")
        self.assertEqual(passwd[5:], ["/var/lib/picket", "/usr/sbin/nologin"])
        group = root.run(["getent", "group", "picket"]).stdout.strip().split(":")
        self.assertEqual(group[2], passwd[3], "picket's primary group is not picket")
        self.check_dir(root, "/var/lib/picket", 0o750, "picket:picket")
        self.check_dir(root, "/var/log/picket", 0o750, "picket:picket")
        for pkg in EXPECTED:
            r = root.run(["/usr/bin/" + BINARY[pkg], "--help"])
            self.assertIn("Usage:", r.stdout)
        self.verify_units(root)
        self.guide(root)

        # State as the services would leave it, for the purge to remove.
        for d in ("/var/lib/picket/sensor-eth1", "/var/log/picket/eth1"):
            os.makedirs(root.path(d))
        for f in ("/var/lib/picket/sensor-eth1/bundle.tar", "/var/log/picket/eth1/eve.json",
                  "/var/log/picket/eth1/eve.json.1", "/var/lib/picket/manager.db",
                  "/var/lib/picket/manager.db-wal"):
            with open(root.path(f), "w") as fh:
                fh.write("x\n")

        # Upgrade: the edited conffile is kept, the directories stay as they were.
        with open(root.path("/etc/picket/sensor.yaml"), "a") as f:
            f.write("# edited by packages_test\n")
        edited = slurp(root.path("/etc/picket/sensor.yaml"))
        # postinst sets the directories' owner and mode again unless dpkg-statoverride has an
        # entry for them (the administrator's way to choose).
        root.run(["chmod", "0755", "/var/lib/picket"])
        root.run(["dpkg-statoverride", "--update", "--add", "root", "picket", "0770",
                  "/var/log/picket"])
        r = root.run(["dpkg", "-i", "/tmp/debs/upgrade.deb"])
        print("dpkg -i (upgrade):\n" + r.stdout + r.stderr, flush=True)
        self.assertEqual(self.status(root, "picket-sensor"),
                         "install ok installed " + deb_field(UPGRADE, "Version"))
        self.assertEqual(slurp(root.path("/etc/picket/sensor.yaml")), edited)
        for suffix in (".dpkg-dist", ".dpkg-new", ".dpkg-old"):
            self.assertFalse(os.path.exists(root.path("/etc/picket/sensor.yaml" + suffix)))
        self.check_dir(root, "/var/lib/picket", 0o750, "picket:picket")
        self.check_dir(root, "/var/log/picket", 0o770, "root:picket")
        self.assertTrue(os.path.exists(root.path("/var/log/picket/eth1/eve.json")))

        # Remove: binaries and units go; conffiles, state, logs and the user stay.
        root.run(["dpkg", "-r", "picket-sensor"])
        self.assertEqual(self.status(root, "picket-sensor"),
                         "deinstall ok config-files " + deb_field(UPGRADE, "Version"))
        for path, _ in EXPECTED["picket-sensor"].items():
            if path in CONFFILES["picket-sensor"]:
                self.assertTrue(os.path.exists(root.path(path)), path)
            else:
                self.assertFalse(os.path.exists(root.path(path)), path)
        self.assertEqual(slurp(root.path("/etc/picket/sensor.yaml")), edited)
        self.assertTrue(os.path.exists(root.path("/var/lib/picket/sensor-eth1/bundle.tar")))
        self.assertTrue(os.path.exists(root.path("/var/log/picket/eth1/eve.json")))

        # Purge the sensor: its conffiles, state and logs go; the manager's database stays.
        root.run(["dpkg", "-P", "picket-sensor"])
        self.assertEqual(self.status(root, "picket-sensor"), "not-installed")
        for path in list(CONFFILES["picket-sensor"]) + ["/var/lib/picket/sensor-eth1",
                                                        "/var/log/picket/eth1"]:
            self.assertFalse(os.path.exists(root.path(path)), path)
        self.assertTrue(os.path.exists(root.path("/var/lib/picket/manager.db")))
        self.assertTrue(os.path.exists(root.path("/etc/picket/manager.yaml")))
        self.assertTrue(os.path.exists(root.path("/usr/bin/picket-manager")))

        # Purge the rest: nothing of Picket is left but its user.
        root.run(["dpkg", "-P", "picket-manager", "picketctl"])
        for pkg, files in EXPECTED.items():
            self.assertEqual(self.status(root, pkg), "not-installed")
            for path in files:
                self.assertFalse(os.path.exists(root.path(path)), path)
        for path in ("/var/lib/picket", "/var/log/picket", "/etc/picket"):
            self.assertFalse(os.path.exists(root.path(path)), path)
        self.assertEqual(root.run(["getent", "passwd", "picket"]).stdout.split(":")[0], "picket")

    # deploy/README.md "Install from packages", both hosts in this root. The commands are the
    # guide's; only the addresses (loopback, free ports) and the capture (a pcap) differ.
    GUIDE_NAME = "pkg-edge-1"

    def ctl(self, root, port, *args):
        return root.run(["picketctl", "--manager", "127.0.0.1:%d" % port, "--ca",
                         "/etc/picket/pki/ca.crt", "--token-file", "/etc/picket/admin.token"] +
                        list(args), timeout=30)

    def unit_argv(self, root, unit, instance):
        """The installed unit's command as systemd would run it, as user picket (setpriv),
        with the directories systemd would create for it (StateDirectory=, LogsDirectory=)."""
        def read_file(path):
            p = root.path(path)
            return slurp(p) if os.path.exists(p) else None

        argv, keys = systemd_exec(slurp(root.path("/lib/systemd/system/" + unit)), instance,
                                  socket.gethostname(), read_file)
        self.assertEqual((keys["User"], keys["Group"]), ("picket", "picket"), unit)
        for key, base in (("StateDirectory", "/var/lib/"), ("LogsDirectory", "/var/log/")):
            if key in keys:
                root.run(["install", "-d", "-o", "picket", "-g", "picket", "-m",
                          keys.get(key + "Mode", "0755"), base + keys[key]])
        return ["setpriv", "--reuid", "picket", "--regid", "picket", "--init-groups",
                "--"] + argv

    def start(self, root, procs, name, argv):
        log = os.path.join(WORK, "guide-%s-%d.log" % (name, len(procs)))
        p = root.popen(argv, log)
        procs.append((p, log))
        return p, log

    def wait_log(self, p, log, pattern, seconds=30):
        rx = re.compile(pattern)

        def found():
            m = rx.search(slurp(log))
            if not m and p.poll() is not None:
                raise AssertionError("exited %s before /%s/:\n%s" % (p.returncode, pattern,
                                                                       slurp(log)))
            return m
        return picket_e2e.poll(found, "/%s/ in %s" % (pattern, log), seconds)

    def guide(self, root):
        t = time.monotonic()
        procs = []
        try:
            self.guide_steps(root, procs)
        finally:
            for p, _ in procs:
                if p.poll() is None:
                    p.send_signal(signal.SIGTERM)
                    try:
                        p.wait(timeout=15)
                    except subprocess.TimeoutExpired:
                        p.kill()
                        p.wait()
        # The administrator's files of the guide; the purge below must leave nothing else.
        root.run(["rm", "-rf", "/etc/picket/pki", "/etc/picket/admin.token",
                  "/etc/picket/bootstrap.token", "/etc/picket/sensor.env"])
        print("install guide (manager and enrolled sensor): %.1f s" % (time.monotonic() - t),
              flush=True)

    def guide_steps(self, root, procs):
        # The manager host: PKI, admin token, enrollment on in the packaged manager.yaml.
        root.run(["picketctl", "pki", "init", "/etc/picket/pki", "--cn", "Package test CA"])
        root.run(["picketctl", "pki", "issue", "/etc/picket/pki", "--kind", "manager", "--name",
                  "manager", "--san", "127.0.0.1"])
        root.run(["sh", "-c", "head -c 32 /dev/urandom | base64 | tr -d '=+/' > "
                  "/etc/picket/admin.token"])
        root.run(["sed", "-i", "s|^  # ca-key: |  ca-key: |", "/etc/picket/manager.yaml"])
        port, metrics = free_port(), free_port()
        conf = slurp(root.path("/etc/picket/manager.yaml"))
        for key, value in (("listen", "127.0.0.1:%d" % port),
                           ("metrics-listen", "127.0.0.1:%d" % metrics)):
            conf, n = re.subn(r"(?m)^%s: .*$" % key, "%s: %s" % (key, value), conf)
            self.assertEqual(n, 1, key)
        self.assertEqual(re.findall(r"(?m)^  ca-key: (\S+)", conf), ["/etc/picket/pki/ca.key"])
        with open(root.path("/etc/picket/manager.yaml"), "w") as f:
            f.write(conf)
        files = ["/etc/picket/pki/manager.key", "/etc/picket/admin.token"]
        root.run(["chgrp", "picket", "/etc/picket/pki"] + files)
        root.run(["chmod", "0750", "/etc/picket/pki"])
        root.run(["chmod", "0640"] + files)
        manager = self.unit_argv(root, "picket-manager.service", "")
        self.assertEqual(manager[-3:], ["/usr/bin/picket-manager", "-c",
                                        "/etc/picket/manager.yaml"])
        # The CA key as pki init left it (root 0600): the manager, user picket, cannot sign.
        p, log = self.start(root, procs, "manager-no-ca-key", manager)
        try:
            rc = p.wait(timeout=30)
        except subprocess.TimeoutExpired:
            rc = None
        self.assertNotIn(rc, (None, 0), "the manager ran without read access to ca.key:\n" +
                         slurp(log))
        self.assertIn("/etc/picket/pki/ca.key", slurp(log))
        print("manager with ca.key root 0600: exit %d: %s" % (rc, slurp(log).strip()),
              flush=True)
        # The guide's mode for it: root:picket 0640.
        root.run(["chgrp", "picket", "/etc/picket/pki/ca.key"])
        root.run(["chmod", "0640", "/etc/picket/pki/ca.key"])
        r = root.run(["stat", "-c", "%n %a %U:%G", "/etc/picket/pki", "/etc/picket/pki/ca.key",
                      "/etc/picket/pki/manager.key", "/etc/picket/admin.token"])
        self.assertEqual(r.stdout.splitlines(), [
            "/etc/picket/pki 750 root:picket", "/etc/picket/pki/ca.key 640 root:picket",
            "/etc/picket/pki/manager.key 640 root:picket",
            "/etc/picket/admin.token 640 root:picket"])
        p, log = self.start(root, procs, "manager", manager)
        self.wait_log(p, log, r"serving on 127\.0\.0\.1:%d " % port)
        r = self.ctl(root, port, "enroll", "token", "create", "--uses", "1", "--ttl", "1h",
                     "--labels", "site=pkgtest")
        token = r.stdout.strip()
        self.assertRegex(token, r"^\w{8}\.\S+$")

        # The sensor host (the same root here): ca.crt and the token only, the example
        # sensor.env edited as the guide says.
        with open(root.path("/tmp/bootstrap.token"), "w") as f:
            f.write(token + "\n")
        root.run(["install", "-o", "root", "-g", "picket", "-m", "0640", "/tmp/bootstrap.token",
                  "/etc/picket/bootstrap.token"])
        root.run(["cp", "/usr/share/doc/picket-sensor/examples/picket-sensor.env",
                  "/etc/picket/sensor.env"])
        env = slurp(root.path("/etc/picket/sensor.env"))
        for key, value in (("PICKET_MANAGER", "127.0.0.1:%d" % port),
                           ("#?PICKET_NAME", self.GUIDE_NAME),
                           ("PICKET_SENSOR_ARGS", "--workers 1 --metrics-interval 1")):
            env, n = re.subn(r"(?m)^%s=.*$" % key, "%s=%s" % (key.lstrip("#?"), value), env)
            self.assertEqual(n, 1, key)
        # As packaged, the example enrolls with the token file.
        self.assertRegex(env, r"(?m)^PICKET_CREDENTIALS=--bootstrap-token-file "
                              r"/etc/picket/bootstrap.token$")
        with open(root.path("/etc/picket/sensor.env"), "w") as f:
            f.write(env)
        write_pcap(root.path("/tmp/guide.pcap"))
        root.run(["chmod", "0644", "/tmp/guide.pcap"])
        argv = self.unit_argv(root, "picket-sensor@.service", "lo")
        # No AF_PACKET capture in a test: the same command replays the pcap.
        i = argv.index("-i")
        self.assertEqual(argv[i:i + 4], ["-i", "lo", "--capture", "afpacket"])
        argv[i:i + 4] = ["-r", "/tmp/guide.pcap", "--pcap-loop", "0", "--pcap-rate", "20"]
        self.assertNotIn("--tls-cert", argv)
        p, log = self.start(root, procs, "sensor", argv)
        self.wait_log(p, log, r"agent: enrolled as '%s' with bootstrap token" % self.GUIDE_NAME)
        self.wait_log(p, log, r"agent: connected to manager")

        tls = "/var/lib/picket/sensor-lo/tls/"
        r = root.run(["stat", "-L", "-c", "%a %U:%G", tls + "sensor.key", tls + "sensor.crt"])
        modes = r.stdout.split("\n")
        self.assertEqual(modes[0], "600 picket:picket", "sensor.key")
        self.assertEqual(modes[1].split()[1], "picket:picket", "sensor.crt")
        crt = os.path.join(WORK, "guide-sensor.crt")
        with open(crt, "w") as f:
            f.write(root.run(["cat", tls + "sensor.crt"]).stdout)
        subject = ssl._ssl._test_decode_cert(crt)["subject"]
        self.assertEqual([v for rdn in subject for (k, v) in rdn if k == "commonName"],
                         [self.GUIDE_NAME])

        def listed():
            out = json.loads(self.ctl(root, port, "--json", "sensors").stdout)
            return [s for s in out if s["name"] == self.GUIDE_NAME and s["connected"]]
        sensor = picket_e2e.poll(listed, self.GUIDE_NAME + " connected", 20)[0]
        # The token's labels win over the same keys of PICKET_LABELS (site=paris,zone=dmz).
        self.assertEqual(sensor["labels"], {"site": "pkgtest", "zone": "dmz"})

    def verify_units(self, root):
        if not os.path.exists(root.path("/usr/bin/systemd-analyze")):
            print("SKIP: systemd-analyze verify: systemd is not installed", flush=True)
            return
        for unit in ("picket-manager.service", "picket-sensor@eth0.service"):
            r = root.run(["systemd-analyze", "verify", "/lib/systemd/system/" + unit],
                         check=False)
            out = r.stdout + r.stderr
            self.assertEqual(r.returncode, 0, out)
            ours = [l for l in out.split("\n") if "picket-" in l]
            self.assertEqual(ours, [], unit)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def write_pcap(path, count=20):
    """A small pcap (Ethernet, IPv4, UDP 127.0.0.1:40000 -> 127.0.0.2:53) the sensor replays."""
    out = [struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1)]
    for i in range(count):
        payload = b"picket package test %d" % i
        udp = struct.pack("!HHHH", 40000, 53, 8 + len(payload), 0) + payload
        ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(udp), i, 0, 64, 17, 0,
                         bytes([127, 0, 0, 1]), bytes([127, 0, 0, 2]))
        csum = sum(struct.unpack("!10H", ip))
        csum = (csum & 0xFFFF) + (csum >> 16)
        csum = (csum & 0xFFFF) + (csum >> 16)
        ip = ip[:10] + struct.pack("!H", ~csum & 0xFFFF) + ip[12:]
        frame = b"\x02\0\0\0\0\x02" + b"\x02\0\0\0\0\x01" + b"\x08\x00" + ip + udp
        out.append(struct.pack("<IIII", 1700000000 + i, 0, len(frame), len(frame)) + frame)
    with open(path, "wb") as f:
        f.write(b"".join(out))


def systemd_exec(unit_text, instance, hostname, read_file):
    """(argv, {key: value}) of a unit's [Service] as systemd would run it: specifiers %I, %i,
    %H; Environment= assignments, then EnvironmentFile= files in order (they win; a leading
    '-' = optional); in ExecStart a word $VAR is split on whitespace, ${VAR} is replaced
    inside its word. The dict holds User, StateDirectory, LogsDirectory and the like."""
    spec = {"%I": instance, "%i": instance, "%H": hostname, "%%": "%"}
    env, files, execs, keys, section = {}, [], [], {}, None
    for line in unit_text.replace("\\\n", " ").split("\n"):
        line = line.strip()
        if line.startswith("["):
            section = line
            continue
        if section != "[Service]" or not line or line.startswith(("#", ";")):
            continue
        key, value = line.split("=", 1)
        value = re.sub(r"%[IiH%]", lambda m: spec[m.group(0)], value)
        if key == "Environment":
            env.update(a.split("=", 1) for a in shlex.split(value))
        elif key == "EnvironmentFile":
            files.append(value)
        elif key == "ExecStart":
            execs.append(value)
        else:
            keys[key] = value
    for f in files:
        text = read_file(f.lstrip("-"))
        if text is None:
            assert f.startswith("-"), "EnvironmentFile %s does not exist" % f
            continue
        for line in text.splitlines():
            line = line.strip()
            if line and not line.startswith("#"):
                k, v = line.split("=", 1)
                env[k] = v
    assert len(execs) == 1, execs
    argv = []
    for w in shlex.split(execs[0]):
        m = re.fullmatch(r"\$(\w+)", w)
        if m:
            argv.extend(env.get(m.group(1), "").split())
        else:
            argv.append(re.sub(r"\$\{(\w+)\}", lambda m: env.get(m.group(1), ""), w))
    return argv, keys


def main():
    global SOURCE, BUILD
    paths, argv = picket_e2e.parse_args("--source")
    SOURCE, BUILD = paths["source"], paths["build"]
    picket_test.main(argv)


if __name__ == "__main__":
    main()
