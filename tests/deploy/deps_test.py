#!/usr/bin/env python3
"""deploy/install-deps.sh is the one list of Debian packages: check it against the tree.

- The script: --print lists the selection one a line, options combine, no list option is all
  three, an unknown option is an error, and with every package present it calls no apt-get.
- --build satisfies every REQUIRED find_package / pkg_check_modules / pkg_search_module of
  the CMake files outside tests/ and bench/ (those, and the calls under
  if(PICKET_BUILD_TESTS|PICKET_BUILD_BENCH|PICKET_FUZZ), are satisfied by --build plus --test).
  The providing package is found on this machine: a pkg-config module's .pc file, a config
  package's <Name>_DIR from the build's CMakeCache.txt, a find module's documented cache
  variables (library, executable), each given to dpkg -S. It is satisfied when that package is
  in the list or is a direct dependency of a package in it (transitional names such as
  libpcap-dev -> libpcap0.8-dev). An optional call (no REQUIRED) found here must be provided by
  some list of the script, so that no machine has it by chance.
- --runtime covers the packages of the libraries that picket-manager, picket-sensor and
  picketctl of --build are linked against (ELF NEEDED, path from ldd, owner from dpkg -S), except
  those of optional pkg-config modules whose -dev package is not in --build (DPDK: the image's
  sensor has none); --runtime holds no -dev package.
- deploy/Dockerfile installs through install-deps.sh --build and --runtime and names no package
  of its own (no apt-get install).

Without dpkg/pkg-config (not Debian) or without a build (--build) the checks that need them
SKIP. --build-list FILE and --dockerfile FILE check another package list or Dockerfile (to show
what the check finds in an old one).

Usage: deps_test.py --source SOURCE_DIR [--build BUILD_DIR] [--build-list F] [--dockerfile F]
"""
import argparse
import functools
import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
import picket_test  # noqa: E402  (tests/support: how a suite exits, skips apart)

SOURCE = None
BUILD = None
BUILD_LIST_FILE = None
DOCKERFILE = None

BINARIES = ("manager/picket-manager", "sensor/picket-sensor", "manager/cli/picketctl")

# find_package() names that build-essential or cmake themselves satisfy.
TOOLCHAIN = {"Threads": "build-essential", "PkgConfig": "pkg-config"}

# Module-mode find_package(): the cache variables (FindX.cmake's documented ones) naming a file
# of the package; the first of each group that is set counts.
MODULE_VARS = {
    "OpenSSL": [("OPENSSL_CRYPTO_LIBRARY",), ("OPENSSL_SSL_LIBRARY",)],
    "ZLIB": [("ZLIB_LIBRARY_RELEASE", "ZLIB_LIBRARY")],
    "LibLZMA": [("LIBLZMA_LIBRARY_RELEASE", "LIBLZMA_LIBRARY")],
    "CURL": [("CURL_LIBRARY_RELEASE", "CURL_LIBRARY")],
    "SQLite3": [("SQLite3_LIBRARY",)],
    "LibArchive": [("LibArchive_LIBRARY",)],
    "Protobuf": [("Protobuf_LIBRARY_RELEASE", "Protobuf_LIBRARY"),
                 ("Protobuf_PROTOC_EXECUTABLE",)],
    "GTest": [("GTEST_LIBRARY", "GTEST_LIBRARY_RELEASE")],
    "Python3": [("Python3_EXECUTABLE", "_Python3_EXECUTABLE")],
}

# if() conditions whose body is built for tests, benchmarks or fuzzers only.
TEST_CONDITIONS = re.compile(r"PICKET_BUILD_TESTS|PICKET_BUILD_BENCH|PICKET_FUZZ")
TEST_DIRS = ("tests", "bench")

FIND_PACKAGE_KEYWORDS = {
    "EXACT", "QUIET", "REQUIRED", "MODULE", "CONFIG", "NO_MODULE", "GLOBAL", "NO_POLICY_SCOPE",
    "BYPASS_PROVIDER", "COMPONENTS", "OPTIONAL_COMPONENTS", "NAMES", "CONFIGS", "HINTS",
    "PATHS", "PATH_SUFFIXES", "REGISTRY_VIEW", "NO_DEFAULT_PATH"}
PKG_KEYWORDS = {"REQUIRED", "QUIET", "NO_CMAKE_PATH", "NO_CMAKE_ENVIRONMENT_PATH",
                "IMPORTED_TARGET", "GLOBAL"}


def run(args, timeout=60, env=None):
    return subprocess.run(args, capture_output=True, text=True, timeout=timeout, env=env)


def script():
    return os.path.join(SOURCE, "deploy", "install-deps.sh")


@functools.lru_cache(maxsize=None)
def package_list(*options):
    r = run(["bash", script()] + list(options) + ["--print"])
    assert r.returncode == 0, "install-deps.sh %s --print: %s" % (" ".join(options), r.stderr)
    return tuple(r.stdout.split("\n")[:-1])


def build_list():
    if BUILD_LIST_FILE:
        with open(BUILD_LIST_FILE) as f:
            return tuple(f.read().split())
    return package_list("--build")


def need_tool(test, *tools):
    for tool in tools:
        if not shutil.which(tool):
            print("SKIP: %s: %s is not installed" % (test.id(), tool), flush=True)
            test.skipTest(tool + " not installed")


def need_build(test):
    if not BUILD or not os.path.exists(os.path.join(BUILD, "CMakeCache.txt")):
        print("SKIP: %s: no configured build (give --build)" % test.id(), flush=True)
        test.skipTest("no build")


# --- CMake files -------------------------------------------------------------------------

class Call:
    def __init__(self, where, command, args, test_only):
        self.where = where          # "sensor/capture/CMakeLists.txt:1"
        self.command = command      # find_package | pkg_check_modules | pkg_search_module
        self.args = args
        self.test_only = test_only

    @property
    def required(self):
        return "REQUIRED" in self.args

    def modules(self):
        """pkg-config module names (version constraints dropped) of a pkg_* call."""
        mods, skip_version = [], False
        for a in self.args[1:]:
            if a in PKG_KEYWORDS or skip_version:
                skip_version = False
                continue
            if re.fullmatch(r"[<>=]+", a):  # "libfoo >= 1.2": the operator, then the version
                skip_version = True
                continue
            mods.append(re.split(r"[<>=]", a, maxsplit=1)[0])
        return mods

    def __repr__(self):
        return "%s: %s(%s)" % (self.where, self.command, " ".join(self.args))


def strip_comment(line):
    """A CMake line without its # comment (a # inside "..." is kept)."""
    out, quoted = [], False
    for i, ch in enumerate(line):
        if ch == '"' and (i == 0 or line[i - 1] != "\\"):
            quoted = not quoted
        if ch == "#" and not quoted:
            break
        out.append(ch)
    return "".join(out)


def parse_calls(text, relpath):
    """Every dependency call of one CMake file, multi-line calls joined, with its if() scope."""
    lines = [strip_comment(l) for l in text.split("\n")]
    calls = []
    conditions = []  # the stack of enclosing if() conditions
    n = 0
    while n < len(lines):
        m = re.match(r"\s*(\w+)\s*\(", lines[n])
        if not m:
            n += 1
            continue
        start = n
        body = lines[n][m.end():]
        depth = 1 + body.count("(") - body.count(")")
        while depth > 0 and n + 1 < len(lines):
            n += 1
            body += "\n" + lines[n]
            depth += lines[n].count("(") - lines[n].count(")")
        n += 1
        body = body[:body.rindex(")")] if ")" in body else body
        command = m.group(1).lower()
        if command == "if":
            conditions.append(body)
        elif command == "endif":
            if conditions:
                conditions.pop()
        elif command in ("find_package", "pkg_check_modules", "pkg_search_module"):
            args = re.findall(r'"[^"]*"|[^\s"]+', body)
            args = [a.strip('"') for a in args]
            test_only = (relpath.split(os.sep)[0] in TEST_DIRS
                         or any(TEST_CONDITIONS.search(c) for c in conditions))
            calls.append(Call("%s:%d" % (relpath, start + 1), command, args, test_only))
    return calls


def cmake_files():
    for root, dirs, files in os.walk(SOURCE):
        # Build trees (build/, build-san/...) hold copies of find modules, not the project's.
        dirs[:] = sorted(d for d in dirs if not d.startswith((".", "build")))
        for f in sorted(files):
            if f == "CMakeLists.txt" or f.endswith(".cmake"):
                path = os.path.join(root, f)
                yield path, os.path.relpath(path, SOURCE)


def all_calls():
    calls = []
    for path, rel in cmake_files():
        with open(path) as f:
            calls.extend(parse_calls(f.read(), rel))
    return calls


# --- this machine: files -> packages -------------------------------------------------------

OWNERS = {}  # path -> [package], filled by one dpkg -S per batch (each call reads the database)


def prime_owners(paths):
    """Looks up the owners of many paths (as given and with symlinks resolved) at once."""
    todo = sorted({q for p in paths for q in (p, os.path.realpath(p))} - set(OWNERS))
    if not todo:
        return
    r = run(["dpkg", "-S"] + todo, timeout=120)  # exits 1 when some path has no owner
    for q in todo:
        OWNERS[q] = []
    for line in r.stdout.split("\n"):
        if ": " not in line or line.startswith("diversion "):
            continue
        names, path = line.rsplit(": ", 1)
        if path in OWNERS:
            OWNERS[path] = sorted({n.strip().split(":")[0] for n in names.split(",")})


def owners(path):
    """The Debian packages that ship path (dpkg -S), architecture qualifiers dropped; [] when
    none does. Tries the path as given, then with symlinks resolved."""
    prime_owners([path])
    return OWNERS[path] or OWNERS[os.path.realpath(path)]


@functools.lru_cache(maxsize=None)
def depends(package):
    """The direct Depends/Pre-Depends of an installed package (alternatives included)."""
    r = run(["dpkg-query", "-W", "-f=${Depends}, ${Pre-Depends}", package])
    if r.returncode != 0:
        return frozenset()
    names = re.findall(r"(?:^|[,|])\s*([a-z0-9][a-z0-9+.-]+)", r.stdout)
    return frozenset(n.split(":")[0] for n in names)


def satisfied_by(provider, packages):
    """The package of `packages` that brings provider: itself, or one that depends on it."""
    if provider in packages:
        return provider
    for p in packages:
        if provider in depends(p):
            return p
    return None


@functools.lru_cache(maxsize=None)
def cmake_cache():
    entries = {}
    with open(os.path.join(BUILD, "CMakeCache.txt")) as f:
        for line in f:
            m = re.match(r"^([^#/][^:=]*):[A-Z]+=(.*)$", line.rstrip("\n"))
            if m:
                entries[m.group(1)] = m.group(2)
    return entries


def pc_file(module):
    r = run(["pkg-config", "--path", module])
    if r.returncode == 0 and r.stdout.strip():
        return r.stdout.strip()
    r = run(["pkg-config", "--variable=pcfiledir", module])
    if r.returncode == 0 and r.stdout.strip():
        return os.path.join(r.stdout.strip(), module + ".pc")
    return None


def config_file(name, directory):
    for candidate in (name + "Config.cmake", name.lower() + "-config.cmake"):
        p = os.path.join(directory, candidate)
        if os.path.exists(p):
            return p
    found = sorted(glob.glob(os.path.join(directory, "*[Cc]onfig.cmake")))
    return found[0] if found else None


def find_package_files(name):
    """(files that identify the found package, why not) from the build's CMakeCache.txt."""
    cache = cmake_cache()
    d = cache.get(name + "_DIR", "")
    if d and not d.endswith("NOTFOUND"):
        f = config_file(name, d)
        return ([f], None) if f else ([], "no config file in %s_DIR=%s" % (name, d))
    if name not in MODULE_VARS:
        return [], ("%s: neither %s_DIR in CMakeCache.txt nor a known find module "
                    "(add its cache variables to MODULE_VARS in %s)"
                    % (name, name, os.path.basename(__file__)))
    files = []
    for group in MODULE_VARS[name]:
        values = [cache[v] for v in group if cache.get(v) and not cache[v].endswith("NOTFOUND")]
        if not values:
            return [], "none of %s set in CMakeCache.txt" % "/".join(group)
        files.append(values[0])
    return files, None


def provider_files(call):
    """[(what, file)] that identify what a call found here (file None for TOOLCHAIN names),
    or the reason why nothing can be identified."""
    if call.command == "find_package":
        name = call.args[0]
        if name in TOOLCHAIN:
            return [(name, None)]
        files, why = find_package_files(name)
        return why if why else [(name, f) for f in files]
    out = []
    for mod in call.modules():
        pc = pc_file(mod)
        if pc is None:
            return "pkg-config module %s is not installed here" % mod
        out.append((mod, pc))
    return out


def providers(what, f):
    """The packages that provide one (what, file) of provider_files()."""
    if f is None:
        return [TOOLCHAIN[what]]
    pkgs = owners(f)
    if not pkgs and os.path.basename(f) in ("python3", "python"):
        # A Python on the PATH from outside Debian (pyenv, venv): the Debian python3 is what a
        # fresh machine finds.
        pkgs = owners("/usr/bin/python3")
    return pkgs


def call_found_here(call):
    if call.command == "find_package":
        name = call.args[0]
        if name in TOOLCHAIN:
            return True
        return not find_package_files(name)[1]
    return all(pc_file(m) for m in call.modules())


# --- ELF binaries ----------------------------------------------------------------------------

def needed(binary):
    r = run(["objdump", "-p", binary])
    assert r.returncode == 0, r.stderr
    return re.findall(r"^\s*NEEDED\s+(\S+)$", r.stdout, re.M)


def ldd_paths(binary):
    r = run(["ldd", binary])
    assert r.returncode == 0, r.stderr
    paths = {}
    for m in re.finditer(r"^\s*(\S+) => (\S+)", r.stdout, re.M):
        paths[m.group(1)] = m.group(2)
    return paths


def optional_libraries(build_packages):
    """Library names (-lNAME) of the optional pkg-config modules found here whose -dev package
    is not in --build: the image's binaries are built without them."""
    names = set()
    for call in all_calls():
        if call.required or call.command == "find_package" or call.test_only:
            continue
        for mod in call.modules():
            pc = pc_file(mod)
            if pc is None:
                continue
            if any(satisfied_by(p, build_packages) for p in owners(pc)):
                continue
            r = run(["pkg-config", "--libs-only-l", mod])
            names.update(re.findall(r"-l(\S+)", r.stdout))
    return names


# --- tests -----------------------------------------------------------------------------------

class Script(unittest.TestCase):
    def test_print_lists_and_combinations(self):
        build, runtime, test = (package_list(o) for o in ("--build", "--runtime", "--test"))
        for name, lst in (("--build", build), ("--runtime", runtime), ("--test", test)):
            self.assertGreater(len(lst), 0, name)
            self.assertEqual(len(set(lst)), len(lst), "%s names a package twice" % name)
            for p in lst:
                self.assertRegex(p, r"^[a-z0-9][a-z0-9+.-]+$", name)
        self.assertEqual(set(build) & set(runtime), set())
        self.assertEqual(set(build) & set(test), set(), "a --test package already in --build")
        self.assertEqual(package_list(), build + runtime + test)
        self.assertEqual(package_list("--build", "--runtime", "--test"), package_list())
        self.assertEqual(package_list("--runtime", "--build"), build + runtime)
        self.assertEqual(package_list("--list", "--build"), build)
        for p in ("build-essential", "cmake", "libnetfilter-queue-dev", "libmnl-dev",
                  "liblzma-dev"):
            self.assertIn(p, build)
        self.assertIn("ca-certificates", runtime)
        for p in ("libgtest-dev", "libbenchmark-dev", "clang", "prometheus", "redis-server",
                  "iproute2"):
            self.assertIn(p, test)

    def test_runtime_has_no_dev_package(self):
        dev = [p for p in package_list("--runtime") if p.endswith("-dev")]
        self.assertEqual(dev, [], "-dev packages in install-deps.sh --runtime")

    def test_unknown_option(self):
        r = run(["bash", script(), "--buidl", "--print"])
        self.assertEqual(r.returncode, 2)
        self.assertEqual(r.stdout, "")
        self.assertIn("unknown option '--buidl'", r.stderr)

    def test_known_to_apt(self):
        need_tool(self, "apt-cache")
        names = sorted(set(package_list()))
        r = run(["apt-cache", "policy"] + names)
        self.assertEqual(r.returncode, 0, r.stderr)
        known = set(re.findall(r"^(\S+?)(?::\w+)?:$", r.stdout, re.M))
        self.assertEqual(sorted(set(names) - known), [], "packages apt-cache does not know")

    def test_no_apt_get_when_all_present(self):
        need_tool(self, "dpkg-query")
        absent = [p for p in package_list("--build")
                  if "install ok installed" not in run(
                      ["dpkg-query", "-W", "-f=${Status}", p]).stdout]
        if absent:
            print("SKIP: %s: --build packages not installed here: %s" % (self.id(), absent))
            self.skipTest("--build not installed")
        with tempfile.TemporaryDirectory(prefix="picket-deps-") as tmp:
            log = os.path.join(tmp, "calls")
            for tool in ("apt-get", "sudo"):
                with open(os.path.join(tmp, tool), "w") as f:
                    f.write('#!/bin/sh\necho "%s $*" >> %s\nexit 1\n' % (tool, log))
                os.chmod(os.path.join(tmp, tool), 0o755)
            env = dict(os.environ, PATH=tmp + os.pathsep + os.environ["PATH"])
            r = run(["bash", script(), "--build"], env=env)
            self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
            self.assertEqual(r.stdout, "install-deps: all %d packages present\n"
                             % len(package_list("--build")))
            self.assertFalse(os.path.exists(log), "apt-get or sudo was called")


class CMakeParsing(unittest.TestCase):
    def test_parser(self):
        text = ("find_package(Foo 1.2 REQUIRED)  # find_package(Commented REQUIRED)\n"
                "pkg_check_modules(NFQ REQUIRED\n    IMPORTED_TARGET libnetfilter_queue\n"
                "    libmnl>=1.0)\n"
                "pkg_check_modules(DPDK QUIET IMPORTED_TARGET libdpdk)\n"
                "if(PICKET_BUILD_TESTS)\n  find_package(GTest REQUIRED)\nendif()\n"
                "find_package(Bar CONFIG REQUIRED COMPONENTS x)\n")
        calls = parse_calls(text, "x/CMakeLists.txt")
        self.assertEqual([(c.where, c.args[0], c.required, c.test_only) for c in calls],
                         [("x/CMakeLists.txt:1", "Foo", True, False),
                          ("x/CMakeLists.txt:2", "NFQ", True, False),
                          ("x/CMakeLists.txt:5", "DPDK", False, False),
                          ("x/CMakeLists.txt:7", "GTest", True, True),
                          ("x/CMakeLists.txt:9", "Bar", True, False)])
        self.assertEqual(calls[1].modules(), ["libnetfilter_queue", "libmnl"])
        spaced = parse_calls("pkg_search_module(X REQUIRED libx >= 2 liby)", "CMakeLists.txt")
        self.assertEqual(spaced[0].modules(), ["libx", "liby"])
        self.assertTrue(parse_calls("find_package(Python3 REQUIRED)",
                                    os.path.join("tests", "CMakeLists.txt"))[0].test_only)

    def test_tree_has_the_known_calls(self):
        # The parser sees the calls the issue was about (a parser that finds nothing passes
        # everything).
        seen = {(c.where.split(":")[0], c.args[0]) for c in all_calls()}
        for where, name in (("sensor/capture/CMakeLists.txt", "NFQ"),
                            ("sensor/applayer/http/CMakeLists.txt", "LibLZMA"),
                            ("CMakeLists.txt", "yaml-cpp"), ("proto/CMakeLists.txt", "gRPC")):
            self.assertIn((where, name), seen)


class BuildList(unittest.TestCase):
    def check_calls(self, test_only):
        need_tool(self, "dpkg", "pkg-config")
        need_build(self)
        if test_only and any(cmake_cache().get(o, "ON").upper() in ("OFF", "0", "FALSE")
                             for o in ("PICKET_BUILD_TESTS", "PICKET_BUILD_BENCH")):
            print("SKIP: %s: the build has no tests or benchmarks" % self.id(), flush=True)
            self.skipTest("PICKET_BUILD_TESTS/PICKET_BUILD_BENCH off")
        build = set(build_list())
        lists = build | (set(package_list("--test")) if test_only else set())
        everything = set(package_list()) | build
        failures, checked = [], 0
        calls = [c for c in all_calls() if c.test_only == test_only]
        prime_owners(f for c in calls if c.required or call_found_here(c)
                     for found in [provider_files(c)] if not isinstance(found, str)
                     for _, f in found if f)
        for call in calls:
            if not call.required:
                if not call_found_here(call):
                    continue  # optional and absent: nothing to check
                pool, label = everything, "any list of install-deps.sh (optional, found here)"
            else:
                pool = lists
                label = "install-deps.sh --build" + (" or --test" if test_only else "")
            found = provider_files(call)
            if isinstance(found, str):
                failures.append("%s: %s" % (call, found))
                continue
            for what, f in found:
                pkgs = providers(what, f)
                checked += 1
                if not pkgs:
                    failures.append("%s: %s (%s) is not from a Debian package" % (call, what, f))
                    continue
                via = [satisfied_by(p, pool) for p in pkgs]
                if not any(via):
                    failures.append("%s: %s (%s) is provided here by %s, which is not in %s"
                                    % (call, what, f, " or ".join(pkgs), label))
                else:
                    print("  %s: %s %s <- %s%s" % (call.where, what, f or "", pkgs[0],
                          "" if via[0] == pkgs[0] else " (via %s)" % next(v for v in via if v)))
        self.assertGreater(checked, 5)
        if failures:
            self.fail("\n" + "\n".join(failures))

    def test_build_satisfies_the_build(self):
        self.check_calls(test_only=False)

    def test_build_and_test_satisfy_tests_and_benchmarks(self):
        self.check_calls(test_only=True)


class RuntimeList(unittest.TestCase):
    def test_runtime_covers_the_binaries(self):
        need_tool(self, "dpkg", "objdump", "ldd", "pkg-config")
        need_build(self)
        bins = [os.path.join(BUILD, b) for b in BINARIES]
        absent = [b for b in bins if not os.access(b, os.X_OK)]
        if absent:
            print("SKIP: %s: not built: %s" % (self.id(), absent), flush=True)
            self.skipTest("binaries not built")
        runtime = set(package_list("--runtime"))
        optional = optional_libraries(set(build_list()))
        missing, ignored = {}, set()
        prime_owners(p for b in bins for p in ldd_paths(b).values())
        for b in bins:
            paths = ldd_paths(b)
            for soname in needed(b):
                self.assertIn(soname, paths, "%s: %s not found by ldd" % (b, soname))
                if soname.split(".so")[0][3:] in optional:
                    ignored.add(soname)
                    continue
                pkgs = owners(paths[soname])
                self.assertTrue(pkgs, "%s: %s (%s) is not from a Debian package"
                                % (b, soname, paths[soname]))
                if not set(pkgs) & runtime:
                    missing.setdefault(" or ".join(pkgs), []).append(
                        "%s (%s)" % (soname, os.path.basename(b)))
        if ignored:
            print("  not in the image (optional, -dev not in --build): %s"
                  % " ".join(sorted(ignored)))
        if missing:
            self.fail("install-deps.sh --runtime lacks:\n" + "\n".join(
                "%s: for %s" % (p, ", ".join(libs)) for p, libs in sorted(missing.items())))


class Dockerfile(unittest.TestCase):
    def stages(self):
        path = DOCKERFILE or os.path.join(SOURCE, "deploy", "Dockerfile")
        with open(path) as f:
            text = re.sub(r"\\\n", " ", f.read())
        parts = re.split(r"^FROM\s+", text, flags=re.M)[1:]
        self.assertEqual(len(parts), 2, "expected a build and a runtime stage")
        return parts

    def test_installs_through_install_deps(self):
        build, runtime = self.stages()
        for name, stage, option in (("build", build, "--build"), ("runtime", runtime, "--runtime")):
            self.assertTrue(re.search(r"(?m)^COPY deploy/install-deps\.sh \S+$", stage),
                            "the %s stage does not COPY deploy/install-deps.sh" % name)
            self.assertTrue(re.search(r"(?m)^RUN bash \S*install-deps\.sh %s( |$)" % option, stage),
                            "the %s stage does not RUN install-deps.sh %s" % (name, option))
        # The build stage checks the --runtime list against the built binaries.
        self.assertIn("install-deps.sh --runtime --print", build,
                      "the build stage does not check --runtime against the binaries")
        self.assertIn("objdump -p /out/bin/*", build)

    def test_no_package_list_of_its_own(self):
        for name, stage in zip(("build", "runtime"), self.stages()):
            m = re.search(r"apt-get\s+install|\bapt\s+install|dpkg\s+-i", stage)
            self.assertIsNone(m, "the %s stage installs packages itself (%r): use "
                              "deploy/install-deps.sh" % (name, m and m.group(0)))


def main():
    global SOURCE, BUILD, BUILD_LIST_FILE, DOCKERFILE
    ap = argparse.ArgumentParser()
    ap.add_argument("--source", required=True, help="repository root")
    ap.add_argument("--build", help="configured build directory (CMakeCache.txt, binaries)")
    ap.add_argument("--build-list", help="check this package list instead of --build")
    ap.add_argument("--dockerfile", help="check this Dockerfile instead of deploy/Dockerfile")
    args, rest = ap.parse_known_args()
    SOURCE = os.path.abspath(args.source)
    BUILD = os.path.abspath(args.build) if args.build else None
    BUILD_LIST_FILE = args.build_list
    DOCKERFILE = args.dockerfile
    picket_test.main([sys.argv[0]] + rest)


if __name__ == "__main__":
    main()
