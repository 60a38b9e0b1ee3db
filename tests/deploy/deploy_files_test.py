#!/usr/bin/env python3
"""Offline checks of the deployment files in deploy/, with the real tools.

- promtool check config deploy/prometheus.yml; its scrape target's port is the manager's
  metrics port (metrics-listen in deploy/manager.yaml).
- docker-compose config renders deploy/docker-compose.yml; the services, ports and volumes
  are the expected ones and every bind-mounted file exists; Grafana's provisioning points
  at the mounted dashboards and at the compose Prometheus.
- kubectl kustomize renders deploy/k8s; the DaemonSet, the managers' Deployment (2 replicas
  on PostgreSQL: DSN from a Secret, never in args; replica name from the pod) and PDB,
  Services and ConfigMaps agree with each other and with deploy/manager.yaml /
  deploy/sensor.yaml; deploy/k8s/config is what its generate.py writes. deploy/k8s/postgres-
  trial and deploy/k8s/migrate-from-sqlite render on their own, outside the base, and so
  does the overlay deploy/k8s-sqlite (one manager on SQLite, deploy/manager.yaml as it is).
- docker-compose config renders docker-compose.yml + docker-compose.postgres.yml: PostgreSQL,
  two managers with the DSN in their environment, a sensor naming both, Prometheus on
  prometheus-postgres.yml (promtool-checked, both managers as targets).
- prometheus.yml loads deploy/prometheus/picket-alerts.yml, compose mounts it there;
  kubectl kustomize renders deploy/k8s/monitoring (ServiceMonitor on the manager's metrics
  port, PrometheusRule equal to the rule file), which the base does not include.
- systemd-analyze verify accepts the units (ExecStart binaries replaced by stubs, since
  they are not installed here); every flag they pass exists in sensor/engine/sensor_options.cc or
  manager/main.cc.
- every key of deploy/sensor.yaml is read by the sensor and every key of deploy/manager.yaml
  by the manager, so the examples cannot drift; with --build, picket-sensor loads
  deploy/sensor.yaml and applies its rule variables.

A check whose tool is not installed prints SKIP and passes; everything else is exact.

Usage: deploy_files_test.py --source SOURCE_DIR [--build BUILD_DIR]
"""
import argparse
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import unittest

import yaml

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
import picket_test  # noqa: E402  (tests/support: how a suite exits, skips apart)

SOURCE = None
BUILD = None

# The ports the brief and the docs promise; the files must agree with them and each other.
MANAGER_GRPC_PORT = 7443
MANAGER_METRICS_PORT = 9750
SENSOR_METRICS_PORT = 9751
PROMETHEUS_PORT = 9090
GRAFANA_PORT = 3000

# Maps in sensor.yaml whose keys are user-chosen names (rule variables): the sensor iterates
# them instead of naming each key, so the check is that it reads the map.
# map -> string literals that prove the sensor reads it (sensor/engine/sensor_config.cc).
SENSOR_OPEN_MAPS = {
    "vars.address-groups": ['"vars"', '"address-groups"'],
    "vars.port-groups": ['"vars"', '"port-groups"'],
    # outputs.eve is read as a section (sensor/engine/eve_config.cc) whose unknown keys are a
    # config error, so the -T run of deploy/sensor.yaml below proves each of its keys is read.
    "outputs.eve": ['"outputs.eve"', '"alert"', '"xff"', '"payload-printable"'],
}


def path(*parts):
    return os.path.join(SOURCE, *parts)


def read(*parts):
    with open(path(*parts)) as f:
        return f.read()


def load_yaml(*parts):
    with open(path(*parts)) as f:
        return yaml.safe_load(f)


def run(args, timeout=60, cwd=None):
    return subprocess.run(args, capture_output=True, text=True, timeout=timeout, cwd=cwd)


def skip(test, tool):
    print("SKIP: %s: %s is not installed" % (test.id(), tool), flush=True)
    test.skipTest(tool + " not installed")


def port_of(hostport):
    """'0.0.0.0:9750', '[::]:9750', ':9750' -> 9750."""
    m = re.fullmatch(r"(?:\[[^\]]*\]|[^:\[\]]*):(\d+)", str(hostport))
    assert m, "not HOST:PORT: %r" % (hostport,)
    return int(m.group(1))


def host_of(hostport):
    return str(hostport).rsplit(":", 1)[0]


def leaf_keys(node, prefix=""):
    """Dotted paths of the scalar / list values of a YAML mapping."""
    out = []
    for k, v in node.items():
        key = prefix + str(k)
        if isinstance(v, dict) and v:
            out.extend(leaf_keys(v, key + "."))
        else:
            out.append(key)
    return out


def sources(*dirs, exts=(".cc", ".h")):
    text = []
    for d in dirs:
        for root, _, files in os.walk(path(d)):
            for f in sorted(files):
                if f.endswith(exts):
                    with open(os.path.join(root, f)) as fh:
                        text.append(fh.read())
    return "\n".join(text)


def cli_flags(main_cc):
    """Every option and flag name a CLI11 main.cc declares ('-c', '--config', ...)."""
    text = read(main_cc)
    flags = set()
    for m in re.finditer(r'add_(?:option|flag)\(\s*"([^"]+)"', text):
        for name in m.group(1).split(","):
            if name.startswith("-"):
                flags.add(name)
    return flags


def flags_in(argv):
    """The option names in an argument vector (values and $VARS are not options)."""
    return [a.split("=", 1)[0] for a in argv if a.startswith("-")]


def option_value(argv, flag):
    values = [argv[i + 1] for i, a in enumerate(argv[:-1]) if a == flag]
    assert len(values) == 1, "%s given %d times in %s" % (flag, len(values), argv)
    return values[0]


def manager_config():
    return load_yaml("deploy", "manager.yaml")


def config_generator():
    """deploy/k8s/config/generate.py as a module: what the files in deploy/k8s/config must be."""
    import importlib.util
    spec = importlib.util.spec_from_file_location(
        "picket_config_generate", path("deploy", "k8s", "config", "generate.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


class ExampleConfigs(unittest.TestCase):
    def test_k8s_copies_are_identical(self):
        # kustomize cannot read files outside deploy/k8s: the copies must not drift.
        for name in ("manager.yaml", "sensor.yaml"):
            self.assertEqual(read("deploy", "k8s", "config", name), read("deploy", name),
                             "deploy/k8s/config/%s differs from deploy/%s: copy it" % (name, name))

    def test_k8s_config_is_generated(self):
        # Everything in deploy/k8s/config is what generate.py writes, nothing more.
        want = config_generator().outputs()
        have = sorted(f for f in os.listdir(path("deploy", "k8s", "config"))
                      if f.endswith(".yaml"))
        self.assertEqual(have, sorted(want))
        for name, text in want.items():
            self.assertEqual(read("deploy", "k8s", "config", name), text,
                             "deploy/k8s/config/%s is stale: run python3 "
                             "deploy/k8s/config/generate.py" % name)

    def test_postgres_config_is_manager_yaml_without_db(self):
        # The managers on PostgreSQL take the DSN from $PICKET_DB_DSN, which the manager reads
        # only when no db key is given: the file is deploy/manager.yaml minus db, and names no
        # database at all (a DSN in it would put the password in a ConfigMap).
        pg = load_yaml("deploy", "k8s", "config", "manager-postgres.yaml")
        cfg = manager_config()
        del cfg["db"]
        self.assertEqual(pg, cfg)
        self.assertNotIn("store", pg)
        self.assertNotIn("postgresql://", "\n".join(
            l for l in read("deploy", "k8s", "config", "manager-postgres.yaml").split("\n")
            if not l.lstrip().startswith("#")))

    def test_every_sensor_key_is_read_by_the_sensor(self):
        cfg = load_yaml("deploy", "sensor.yaml")
        src = sources("sensor")
        for open_map, evidence in SENSOR_OPEN_MAPS.items():
            for lit in evidence:
                self.assertIn(lit, src, "sensor no longer reads %s (%s)" % (open_map, lit))
        keys = leaf_keys(cfg)
        self.assertGreater(len(keys), 50)
        unread = []
        for key in keys:
            if any(key.startswith(m + ".") for m in SENSOR_OPEN_MAPS):
                continue
            if '"%s"' % key not in src:
                unread.append(key)
        self.assertEqual(unread, [], "keys in deploy/sensor.yaml that sensor/ never reads")

    def test_every_sensor_key_line_is_commented(self):
        # A key is documented by a comment on its line or right above it; a section header
        # (no value) by its children; rule variables by the block comment above vars.
        lines = read("deploy", "sensor.yaml").split("\n")
        prev = ""
        bare = []
        in_open_map = False
        flow_depth = 0  # inside a {...} spanning lines: its keys are the line's above
        for n, line in enumerate(lines, 1):
            m = re.match(r"^(\s*)([A-Za-z0-9_.-]+):(.*)$", line)
            if m and flow_depth == 0:
                indent, key, rest = len(m.group(1)), m.group(2), m.group(3)
                if indent <= 2:
                    in_open_map = key in ("address-groups", "port-groups")
                elif in_open_map:
                    prev = line
                    continue
                documented = ("#" in rest or prev.strip().startswith("#")
                              or rest.strip() == "")
                if not documented:
                    bare.append("%d: %s" % (n, line))
            code = line.split(" #", 1)[0]
            flow_depth += code.count("{") - code.count("}")
            if line.strip():
                prev = line
        self.assertEqual(bare, [], "deploy/sensor.yaml keys without a comment")

    def test_every_manager_key_is_read_by_the_manager(self):
        src = sources("manager")
        unread = ['%s' % k for k in leaf_keys(manager_config()) if '"%s"' % k not in src]
        self.assertEqual(unread, [], "keys in deploy/manager.yaml that manager/ never reads")

    def test_manager_config_values(self):
        cfg = manager_config()
        self.assertEqual(port_of(cfg["listen"]), MANAGER_GRPC_PORT)
        self.assertEqual(port_of(cfg["metrics-listen"]), MANAGER_METRICS_PORT)
        self.assertEqual(cfg["db"], "/var/lib/picket/manager.db")
        self.assertIs(cfg["insecure"], False)
        self.assertEqual(cfg["tls"], {"cert": "/etc/picket/pki/manager.crt",
                                      "key": "/etc/picket/pki/manager.key",
                                      "client-ca": "/etc/picket/pki/ca.crt"})

    def test_sensor_loads_the_example(self):
        sensor = os.path.join(BUILD, "sensor", "picket-sensor") if BUILD else None
        if not sensor or not os.access(sensor, os.X_OK):
            print("SKIP: %s: no built picket-sensor (give --build)" % self.id(), flush=True)
            self.skipTest("no picket-sensor")
        with tempfile.TemporaryDirectory(prefix="picket-deploy-") as tmp:
            rules = os.path.join(tmp, "vars.rules")
            with open(rules, "w") as f:
                # Rules over the variables deploy/sensor.yaml sets: a quoting mistake there
                # (an unquoted "!$HOME_NET" is a YAML tag) makes them skip.
                f.write('alert tcp $EXTERNAL_NET any -> $HOME_NET $HTTP_PORTS '
                        '(msg:"deploy vars"; content:"x"; sid:1;)\n'
                        'alert udp $HOME_NET any -> $DNS_SERVERS 53 '
                        '(msg:"deploy vars 2"; content:"y"; sid:2;)\n')
            r = run([sensor, "-c", path("deploy", "sensor.yaml"), "-T", "-S", rules])
            self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
            self.assertIn("rules: 2 loaded, 0 skipped", r.stdout)


class Prometheus(unittest.TestCase):
    def test_promtool_accepts_the_config(self):
        promtool = shutil.which("promtool")
        if not promtool:
            skip(self, "promtool")
        r = run([promtool, "check", "config", path("deploy", "prometheus.yml")])
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn("SUCCESS", r.stdout + r.stderr)

    def test_scrapes_the_manager_metrics_port(self):
        prom = load_yaml("deploy", "prometheus.yml")
        jobs = {j["job_name"]: j for j in prom["scrape_configs"]}
        self.assertEqual(sorted(jobs), ["picket-manager"])
        job = jobs["picket-manager"]
        self.assertEqual(job["scrape_interval"], "15s")
        self.assertEqual(job.get("metrics_path", "/metrics"), "/metrics")
        targets = [t for sc in job["static_configs"] for t in sc["targets"]]
        self.assertEqual(len(targets), 1)
        self.assertEqual(port_of(targets[0]), port_of(manager_config()["metrics-listen"]))
        # The host is the compose service that runs the manager.
        compose = load_yaml("deploy", "docker-compose.yml")
        self.assertIn(host_of(targets[0]), compose["services"])
        # The example sensor job is there, commented out.
        self.assertRegex(read("deploy", "prometheus.yml"),
                         r"#\s*- job_name: picket-sensor[\s\S]*:%d" % SENSOR_METRICS_PORT)

    def test_postgres_variant_scrapes_both_managers(self):
        # docker-compose.postgres.yml mounts prometheus-postgres.yml: every manager replica is
        # a target (each exports its own sensors' series), otherwise prometheus.yml's settings.
        promtool = shutil.which("promtool")
        if promtool:
            r = run([promtool, "check", "config", path("deploy", "prometheus-postgres.yml")])
            self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        base = load_yaml("deploy", "prometheus.yml")
        pg = load_yaml("deploy", "prometheus-postgres.yml")
        self.assertEqual(pg["global"], base["global"])
        self.assertEqual(pg["rule_files"], base["rule_files"])
        self.assertEqual(len(pg["scrape_configs"]), 1)
        job, base_job = pg["scrape_configs"][0], base["scrape_configs"][0]
        self.assertEqual({k: v for k, v in job.items() if k != "static_configs"},
                         {k: v for k, v in base_job.items() if k != "static_configs"})
        targets = [t for sc in job["static_configs"] for t in sc["targets"]]
        metrics = port_of(manager_config()["metrics-listen"])
        self.assertEqual(targets, ["manager:%d" % metrics, "manager-b:%d" % metrics])

    def test_loads_the_alerting_rules(self):
        # Relative to prometheus.yml, as Prometheus resolves it; docker-compose mounts the
        # file at the same place relative to /etc/prometheus/prometheus.yml.
        prom = load_yaml("deploy", "prometheus.yml")
        self.assertEqual(prom["rule_files"], ["prometheus/picket-alerts.yml"])
        self.assertTrue(os.path.isfile(path("deploy", "prometheus", "picket-alerts.yml")))


def compose_ports(service):
    """[(host_ip, published, target)] from docker-compose config's two renderings."""
    out = []
    for p in service.get("ports", []):
        if isinstance(p, dict):
            out.append((p.get("host_ip", ""), int(p["published"]), int(p["target"])))
            continue
        spec = str(p).split("/")[0].split(":")
        if len(spec) == 3:
            out.append((spec[0], int(spec[1]), int(spec[2])))
        elif len(spec) == 2:
            out.append(("", int(spec[0]), int(spec[1])))
        else:
            out.append(("", int(spec[0]), int(spec[0])))
    return out


def compose_volumes(service):
    """{container path: (source, read_only)}."""
    out = {}
    for v in service.get("volumes", []):
        if isinstance(v, dict):
            out[v["target"]] = (v.get("source", ""), bool(v.get("read_only")))
            continue
        parts = str(v).split(":")
        mode = parts[2] if len(parts) > 2 else "rw"
        out[parts[1]] = (parts[0], "ro" in mode.split(","))
    return out


class Compose(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tool = shutil.which("docker-compose")
        cls.rendered = None
        if cls.tool:
            env = {k: v for k, v in os.environ.items()
                   if not k.startswith(("PICKET_", "GRAFANA_", "COMPOSE_"))}
            r = subprocess.run([cls.tool, "-f", path("deploy", "docker-compose.yml"), "config"],
                               capture_output=True, text=True, timeout=60, env=env)
            cls.result = r
            if r.returncode == 0:
                cls.rendered = yaml.safe_load(r.stdout)

    def setUp(self):
        if not self.tool:
            skip(self, "docker-compose")
        self.assertEqual(self.result.returncode, 0, self.result.stdout + self.result.stderr)

    def test_services(self):
        self.assertEqual(sorted(self.rendered["services"]), ["grafana", "manager", "prometheus"])

    def test_manager(self):
        m = self.rendered["services"]["manager"]
        self.assertEqual(m["image"], "picket:latest")
        self.assertEqual(m["command"], ["picket-manager", "-c", "/etc/picket/manager.yaml"])
        self.assertEqual(set(flags_in(m["command"][1:])) - cli_flags("manager/main.cc"), set())
        published = {(t, p) for _, p, t in compose_ports(m)}
        cfg = manager_config()
        self.assertEqual(published, {(port_of(cfg["listen"]),) * 2,
                                     (port_of(cfg["metrics-listen"]),) * 2})
        vols = compose_volumes(m)
        # The SQLite directory is a named volume, not the container's layer.
        db_dir = os.path.dirname(cfg["db"])
        self.assertIn(db_dir, vols)
        self.assertIn(vols[db_dir][0], self.rendered["volumes"])
        self.assertEqual(vols["/etc/picket/manager.yaml"],
                         (path("deploy", "manager.yaml"), True))
        self.assertIn(os.path.dirname(cfg["tls"]["cert"]), vols)
        self.assertIn(cfg["admin-token-file"], vols)
        self.assertEqual(m["build"]["context"], SOURCE)
        self.assertTrue(os.path.isfile(os.path.join(SOURCE, m["build"]["dockerfile"])))

    def test_prometheus(self):
        p = self.rendered["services"]["prometheus"]
        self.assertRegex(p["image"], r"^prom/prometheus:v2\.")
        vols = compose_volumes(p)
        self.assertEqual(vols["/etc/prometheus/prometheus.yml"],
                         (path("deploy", "prometheus.yml"), True))
        self.assertEqual(vols["/etc/prometheus/prometheus/picket-alerts.yml"],
                         (path("deploy", "prometheus", "picket-alerts.yml"), True))
        self.assertIn("--config.file=/etc/prometheus/prometheus.yml", p["command"])
        self.assertIn("--web.listen-address=0.0.0.0:%d" % PROMETHEUS_PORT, p["command"])
        self.assertEqual([(t, pub) for _, pub, t in compose_ports(p)],
                         [(PROMETHEUS_PORT, PROMETHEUS_PORT)])

    def test_grafana_and_its_provisioning(self):
        g = self.rendered["services"]["grafana"]
        self.assertRegex(g["image"], r"^grafana/grafana:10\.")
        self.assertEqual([(t, pub) for _, pub, t in compose_ports(g)],
                         [(GRAFANA_PORT, GRAFANA_PORT)])
        vols = compose_volumes(g)
        prov = path("deploy", "grafana", "provisioning")
        self.assertEqual(vols["/etc/grafana/provisioning/datasources"],
                         (os.path.join(prov, "datasources"), True))
        self.assertEqual(vols["/etc/grafana/provisioning/dashboards"],
                         (os.path.join(prov, "dashboards"), True))
        # The dashboard provider reads the directory where dashboards/ is mounted.
        providers = load_yaml("deploy", "grafana", "provisioning", "dashboards",
                              "picket.yml")["providers"]
        self.assertEqual(len(providers), 1)
        dash_dir = providers[0]["options"]["path"]
        self.assertEqual(vols[dash_dir], (path("dashboards"), True))
        self.assertEqual(providers[0]["type"], "file")
        # The home dashboard is one of those files.
        home = g["environment"]["GF_DASHBOARDS_DEFAULT_HOME_DASHBOARD_PATH"]
        self.assertEqual(os.path.dirname(home), dash_dir)
        self.assertTrue(os.path.isfile(path("dashboards", os.path.basename(home))), home)
        # The data source is the compose Prometheus, the default one (the dashboards pick
        # their data source with a variable whose default is the default data source).
        ds = load_yaml("deploy", "grafana", "provisioning", "datasources",
                       "picket.yml")["datasources"]
        self.assertEqual(len(ds), 1)
        self.assertEqual(ds[0]["type"], "prometheus")
        self.assertIs(ds[0]["isDefault"], True)
        self.assertEqual(ds[0]["url"], "http://prometheus:%d" % PROMETHEUS_PORT)

    def test_bind_mounts_exist(self):
        for name, svc in self.rendered["services"].items():
            for source, _ in compose_volumes(svc).values():
                if source.startswith(SOURCE + os.sep):
                    self.assertTrue(os.path.exists(source), "%s: %s" % (name, source))


class ComposePostgres(unittest.TestCase):
    """deploy/docker-compose.postgres.yml on top of docker-compose.yml: PostgreSQL and two
    managers on it."""

    PASSWORD = "test-db-password"

    @classmethod
    def render(cls, password, profile=None):
        env = {k: v for k, v in os.environ.items()
               if not k.startswith(("PICKET_", "GRAFANA_", "COMPOSE_"))}
        if password is not None:
            env["PICKET_DB_PASSWORD"] = password
        args = [cls.tool, "-f", path("deploy", "docker-compose.yml"),
                "-f", path("deploy", "docker-compose.postgres.yml")]
        if profile:
            args += ["--profile", profile]
        return subprocess.run(args + ["config"], capture_output=True, text=True, timeout=60,
                              env=env)

    @classmethod
    def setUpClass(cls):
        cls.tool = shutil.which("docker-compose")
        cls.rendered = None
        if cls.tool:
            cls.result = cls.render(cls.PASSWORD, "sensor")
            if cls.result.returncode == 0:
                cls.rendered = yaml.safe_load(cls.result.stdout)

    def setUp(self):
        if not self.tool:
            skip(self, "docker-compose")
        self.assertEqual(self.result.returncode, 0, self.result.stdout + self.result.stderr)

    def managers(self):
        return {n: s for n, s in self.rendered["services"].items()
                if s.get("command", [None])[0] == "picket-manager"}

    def test_services(self):
        self.assertEqual(sorted(self.rendered["services"]),
                         ["grafana", "manager", "manager-b", "postgres", "prometheus", "sensor"])
        self.assertEqual(sorted(self.managers()), ["manager", "manager-b"])

    def test_no_default_password(self):
        # Without PICKET_DB_PASSWORD the variant does not render (no built-in password).
        r = self.render(None)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("PICKET_DB_PASSWORD", r.stdout + r.stderr)

    def test_postgres(self):
        pg = self.rendered["services"]["postgres"]
        self.assertRegex(pg["image"], r"^postgres:15(\.|$)")
        self.assertEqual(pg["environment"]["POSTGRES_PASSWORD"], self.PASSWORD)
        self.assertEqual(compose_ports(pg), [], "the database is published on the host")
        vols = compose_volumes(pg)
        self.assertIn(vols["/var/lib/postgresql/data"][0], self.rendered["volumes"])
        self.assertIn("pg_isready", pg["healthcheck"]["test"])

    def test_two_managers_on_postgres(self):
        cfg = manager_config()
        want_cfg = path("deploy", "k8s", "config", "manager-postgres.yaml")
        pg = self.rendered["services"]["postgres"]["environment"]
        dsn = "postgresql://%s:%s@postgres:5432/%s" % (pg["POSTGRES_USER"], self.PASSWORD,
                                                       pg["POSTGRES_DB"])
        names, published, data = [], set(), set()
        for name, m in sorted(self.managers().items()):
            self.assertEqual(m["image"], "picket:latest")
            argv = m["command"]
            self.assertEqual(set(flags_in(argv[1:])) - cli_flags("manager/main.cc"), set())
            self.assertEqual(option_value(argv, "-c"), "/etc/picket/manager.yaml")
            self.assertNotIn("--db", argv)
            for a in argv:
                self.assertNotIn(self.PASSWORD, a)
            names.append(option_value(argv, "--replica-name"))
            # The DSN in the environment, the configuration without db:.
            self.assertEqual(m["environment"], {"PICKET_DB_DSN": dsn})
            vols = compose_volumes(m)
            self.assertEqual(vols["/etc/picket/manager.yaml"], (want_cfg, True))
            self.assertEqual(m["depends_on"]["postgres"]["condition"], "service_healthy")
            self.assertIn(os.path.dirname(cfg["tls"]["cert"]), vols)
            self.assertIn(cfg["admin-token-file"], vols)
            work = vols[m["working_dir"]]
            self.assertIn(work[0], self.rendered["volumes"])
            data.add(work[0])
            grpc = [pub for _, pub, t in compose_ports(m) if t == port_of(cfg["listen"])]
            self.assertEqual(len(grpc), 1, name)
            published.add(grpc[0])
        self.assertEqual(sorted(names), ["manager", "manager-b"])
        self.assertEqual(len(published), 2, "both managers on one host port")
        self.assertEqual(len(data), 2, "two managers share a working volume")

    def test_sensor_names_both_managers(self):
        cfg = manager_config()
        published = sorted(pub for m in self.managers().values()
                           for _, pub, t in compose_ports(m) if t == port_of(cfg["listen"]))
        s = self.rendered["services"]["sensor"]
        argv = s["command"]
        self.assertEqual(argv[0], "picket-sensor")
        self.assertEqual(set(flags_in(argv[1:])) - cli_flags("sensor/engine/sensor_options.cc"),
                         set())
        self.assertEqual(s["network_mode"], "host")
        managers = option_value(argv, "--manager").split(",")
        self.assertEqual(sorted(port_of(a) for a in managers), published)
        self.assertEqual({host_of(a) for a in managers}, {"127.0.0.1"})
        self.assertEqual(set(s["cap_add"]) - {"NET_RAW", "NET_ADMIN", "IPC_LOCK"}, set())
        self.assertEqual(s["cap_drop"], ["ALL"])
        self.assertIn("--bootstrap-token-file", argv)
        # Only with --profile sensor.
        self.assertEqual(s["profiles"], ["sensor"])

    def test_prometheus_scrapes_both(self):
        vols = compose_volumes(self.rendered["services"]["prometheus"])
        self.assertEqual(vols["/etc/prometheus/prometheus.yml"],
                         (path("deploy", "prometheus-postgres.yml"), True))

    def test_bind_mounts_exist(self):
        for name, svc in self.rendered["services"].items():
            for source, _ in compose_volumes(svc).values():
                if source.startswith(SOURCE + os.sep):
                    self.assertTrue(os.path.exists(source), "%s: %s" % (name, source))


class Kustomize(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tool = shutil.which("kubectl")
        cls.objs = None
        if cls.tool:
            r = run([cls.tool, "kustomize", path("deploy", "k8s")], timeout=120)
            cls.result = r
            if r.returncode == 0:
                cls.objs = [o for o in yaml.safe_load_all(r.stdout) if o]

    def setUp(self):
        if not self.tool:
            skip(self, "kubectl")
        self.assertEqual(self.result.returncode, 0, self.result.stdout + self.result.stderr)

    def one(self, kind, name=None):
        found = [o for o in self.objs if o["kind"] == kind
                 and (name is None or o["metadata"]["name"] == name)]
        self.assertEqual(len(found), 1, "%s %s: %d objects" % (kind, name, len(found)))
        return found[0]

    def configmap(self, generated_name):
        return self.one("ConfigMap", generated_name)

    def pod_configmap(self, pod_spec, volume):
        vol = [v for v in pod_spec["volumes"] if v["name"] == volume]
        self.assertEqual(len(vol), 1)
        return self.configmap(vol[0]["configMap"]["name"])

    def mounted_config(self, pod_spec, container, file_name, key=None, want=None):
        """The YAML document mounted at /etc/picket/FILE, from the rendered ConfigMap's KEY
        (default FILE), whose text must be WANT (default deploy/FILE)."""
        key = key or file_name
        mounts = [m for m in container["volumeMounts"]
                  if m["mountPath"] == "/etc/picket/" + file_name]
        self.assertEqual(len(mounts), 1)
        self.assertEqual(mounts[0]["subPath"], key)
        cm = self.pod_configmap(pod_spec, mounts[0]["name"])
        text = cm["data"][key]
        self.assertEqual(text, want if want is not None else read("deploy", file_name))
        return yaml.safe_load(text)

    def manager_pod(self):
        """(Deployment, pod spec, container, manager.yaml as mounted) of the managers."""
        dep = self.one("Deployment", "picket-manager")
        spec = dep["spec"]["template"]["spec"]
        self.assertEqual(len(spec["containers"]), 1)
        c = spec["containers"][0]
        want = config_generator().outputs()["manager-postgres.yaml"]
        cfg = self.mounted_config(spec, c, "manager.yaml", "manager-postgres.yaml", want)
        return dep, spec, c, cfg

    def test_namespace(self):
        ns = self.one("Namespace")
        self.assertEqual(ns["metadata"]["name"], "picket")
        for o in self.objs:
            if o["kind"] != "Namespace":
                self.assertEqual(o["metadata"].get("namespace"), "picket",
                                 "%s %s" % (o["kind"], o["metadata"]["name"]))

    def test_manager_deployment(self):
        # Several managers on one PostgreSQL database: a Deployment, not the SQLite StatefulSet.
        self.assertEqual([o for o in self.objs if o["kind"] == "StatefulSet"], [])
        dep, spec, c, cfg = self.manager_pod()
        self.assertEqual(dep["spec"]["replicas"], 2)
        self.assertEqual(c["image"], "picket:latest")
        argv = c["command"] + c["args"]
        self.assertEqual(argv[0], "picket-manager")
        self.assertEqual(set(flags_in(argv[1:])) - cli_flags("manager/main.cc"), set())
        self.assertEqual(option_value(argv, "-c"), "/etc/picket/manager.yaml")
        ports = {p["name"]: p["containerPort"] for p in c["ports"]}
        self.assertEqual(ports, {"grpc": port_of(cfg["listen"]),
                                 "metrics": port_of(cfg["metrics-listen"])})
        # The TLS files and the admin token are where manager.yaml says.
        mounts = {m["mountPath"]: m["name"] for m in c["volumeMounts"]}
        pki_dir = os.path.dirname(cfg["tls"]["cert"])
        self.assertIn(pki_dir, mounts)
        self.assertEqual(os.path.dirname(cfg["tls"]["key"]), pki_dir)
        self.assertEqual(os.path.dirname(cfg["tls"]["client-ca"]), pki_dir)
        pki = [v for v in spec["volumes"] if v["name"] == mounts[pki_dir]]
        self.assertEqual(pki[0]["secret"]["secretName"], "picket-manager-pki")
        self.assertIn(cfg["admin-token-file"], mounts)
        # The working directory (rule-sources/ with PostgreSQL) is writable scratch space.
        work = [v for v in spec["volumes"] if v["name"] == mounts[c["workingDir"]]]
        self.assertIn("emptyDir", work[0])
        # Probes as before: gRPC port ready, metrics index alive.
        self.assertEqual(c["readinessProbe"]["tcpSocket"]["port"], "grpc")
        self.assertEqual(c["livenessProbe"]["httpGet"], {"path": "/", "port": "metrics"})

    def test_manager_database_from_secret(self):
        _, _, c, cfg = self.manager_pod()
        # No database in the configuration: the manager takes $PICKET_DB_DSN ...
        self.assertNotIn("db", cfg)
        self.assertNotIn("store", cfg)
        argv = c["command"] + c["args"]
        self.assertNotIn("--db", argv)
        # ... from the Secret picket-manager-db, key dsn, never from a literal or the args.
        env = {e["name"]: e for e in c["env"]}
        # deploy/README.md's CloudNativePG patch replaces env/1.
        self.assertEqual(c["env"][1]["name"], "PICKET_DB_DSN")
        self.assertEqual(env["PICKET_DB_DSN"], {"name": "PICKET_DB_DSN", "valueFrom": {
            "secretKeyRef": {"name": "picket-manager-db", "key": "dsn"}}})
        for a in argv:
            self.assertNotIn("PICKET_DB_DSN", a)
            self.assertNotRegex(a, r"^postgres(ql)?://")
        for e in c["env"]:
            self.assertNotIn("value", e, "%s: a literal in the manager's environment" % e["name"])

    def test_manager_replica_name_from_pod_name(self):
        _, _, c, _ = self.manager_pod()
        argv = c["command"] + c["args"]
        self.assertEqual(option_value(argv, "--replica-name"), "$(POD_NAME)")
        env = {e["name"]: e for e in c["env"]}
        self.assertEqual(env["POD_NAME"]["valueFrom"],
                         {"fieldRef": {"fieldPath": "metadata.name"}})
        used = set(re.findall(r"\$\((\w+)\)", " ".join(c["args"])))
        self.assertEqual(used, {"POD_NAME"})

    def test_manager_hardening(self):
        _, spec, c, _ = self.manager_pod()
        pod = spec["securityContext"]
        self.assertIs(pod["runAsNonRoot"], True)
        self.assertEqual(pod["runAsUser"], 10001)
        self.assertEqual(pod["seccompProfile"], {"type": "RuntimeDefault"})
        sc = c["securityContext"]
        self.assertIs(sc["allowPrivilegeEscalation"], False)
        self.assertIs(sc["readOnlyRootFilesystem"], True)
        self.assertEqual(sc["capabilities"], {"drop": ["ALL"]})
        self.assertNotIn("hostNetwork", spec)

    def test_manager_spread_and_disruption_budget(self):
        dep, spec, _, _ = self.manager_pod()
        labels = dep["spec"]["template"]["metadata"]["labels"]
        terms = spec["affinity"]["podAntiAffinity"][
            "preferredDuringSchedulingIgnoredDuringExecution"]
        self.assertEqual(len(terms), 1)
        term = terms[0]["podAffinityTerm"]
        self.assertEqual(term["topologyKey"], "kubernetes.io/hostname")
        self.assertLessEqual(term["labelSelector"]["matchLabels"].items(), labels.items())
        pdb = self.one("PodDisruptionBudget", "picket-manager")
        self.assertEqual(pdb["apiVersion"], "policy/v1")
        self.assertEqual(pdb["spec"]["minAvailable"], 1)
        self.assertEqual(pdb["spec"]["selector"]["matchLabels"],
                         dep["spec"]["selector"]["matchLabels"])
        self.assertLessEqual(pdb["spec"]["selector"]["matchLabels"].items(), labels.items())
        self.assertLess(pdb["spec"]["minAvailable"], dep["spec"]["replicas"])

    def test_manager_service_matches_manager_yaml(self):
        sts, _, _, cfg = self.manager_pod()
        svc = self.one("Service", "picket-manager")
        ports = {p["name"]: (p["port"], p["targetPort"]) for p in svc["spec"]["ports"]}
        self.assertEqual(ports, {"grpc": (port_of(cfg["listen"]), "grpc"),
                                 "metrics": (port_of(cfg["metrics-listen"]), "metrics")})
        self.assertEqual(ports["grpc"][0], MANAGER_GRPC_PORT)
        self.assertEqual(ports["metrics"][0], MANAGER_METRICS_PORT)
        ann = svc["metadata"]["annotations"]
        self.assertEqual(ann["prometheus.io/scrape"], "true")
        self.assertEqual(int(ann["prometheus.io/port"]), port_of(cfg["metrics-listen"]))
        pod_labels = sts["spec"]["template"]["metadata"]["labels"]
        for k, v in svc["spec"]["selector"].items():
            self.assertEqual(pod_labels.get(k), v)
        # The headless Service the sensors dial: every ready replica's address.
        hl = self.one("Service", "picket-manager-headless")
        self.assertEqual(hl["spec"]["clusterIP"], "None")
        self.assertIs(hl["spec"].get("publishNotReadyAddresses", False), False)
        self.assertEqual(hl["spec"]["selector"], svc["spec"]["selector"])
        self.assertEqual([(p["name"], p["port"], p["targetPort"]) for p in hl["spec"]["ports"]],
                         [("grpc", port_of(cfg["listen"]), "grpc")])

    def test_sensor_daemonset(self):
        ds = self.one("DaemonSet", "picket-sensor")
        spec = ds["spec"]["template"]["spec"]
        self.assertIs(spec["hostNetwork"], True)
        self.assertEqual(spec["dnsPolicy"], "ClusterFirstWithHostNet")
        self.assertIn({"operator": "Exists"}, spec["tolerations"])
        self.assertEqual(len(spec["containers"]), 1)
        c = spec["containers"][0]
        self.assertEqual(c["image"], "picket:latest")
        caps = c["securityContext"]["capabilities"]
        self.assertLessEqual({"NET_RAW", "NET_ADMIN"}, set(caps["add"]))
        self.assertEqual(set(caps["add"]) - {"NET_RAW", "NET_ADMIN", "IPC_LOCK"}, set())
        self.assertIs(c["securityContext"].get("privileged", False), False)

        argv = c["command"] + c["args"]
        self.assertEqual(argv[0], "picket-sensor")
        self.assertEqual(set(flags_in(argv[1:])) - cli_flags("sensor/engine/sensor_options.cc"),
                         set())
        self.assertEqual(option_value(argv, "-c"), "/etc/picket/sensor.yaml")
        self.assertEqual(option_value(argv, "--capture"), "afpacket")
        self.mounted_config(spec, c, "sensor.yaml")

        # The manager address is the headless Service's DNS name and gRPC port: one name with
        # every replica's address, so the sensors spread over the managers and fail over.
        svc = self.one("Service", "picket-manager-headless")
        self.assertEqual(svc["spec"]["clusterIP"], "None")
        grpc = [p["port"] for p in svc["spec"]["ports"] if p["name"] == "grpc"]
        manager = option_value(argv, "--manager")
        self.assertEqual(port_of(manager), MANAGER_GRPC_PORT)
        self.assertEqual(grpc, [port_of(manager)])
        self.assertEqual(host_of(manager), "%s.%s.svc" % (svc["metadata"]["name"],
                                                         svc["metadata"]["namespace"]))

        # Metrics: the listen port is the host port the pod exposes and annotates.
        metrics = port_of(option_value(argv, "--metrics-listen"))
        self.assertEqual(metrics, SENSOR_METRICS_PORT)
        self.assertEqual([(p["containerPort"], p["hostPort"]) for p in c["ports"]],
                         [(metrics, metrics)])
        ann = ds["spec"]["template"]["metadata"]["annotations"]
        self.assertEqual(int(ann["prometheus.io/port"]), metrics)

        # Every $(VAR) in the args is defined in env, from an existing ConfigMap key or the
        # downward API, so that Kubernetes expands it.
        env = {e["name"]: e for e in c["env"]}
        used = set(re.findall(r"\$\((\w+)\)", " ".join(c["args"])))
        self.assertEqual(used - set(env), set())
        self.assertEqual(env["NODE_NAME"]["valueFrom"]["fieldRef"]["fieldPath"], "spec.nodeName")
        for e in env.values():
            ref = e.get("valueFrom", {}).get("configMapKeyRef")
            if ref:
                self.assertNotEqual(self.configmap(ref["name"])["data"].get(ref["key"], ""), "",
                                    "%s: empty %s/%s" % (e["name"], ref["name"], ref["key"]))

        # Per-node identity (bootstrap enrollment): no certificate or key is mounted; the only
        # Secret is the bootstrap token, the CA certificate comes alone from a ConfigMap.
        mounts = {m["mountPath"]: m["name"] for m in c["volumeMounts"]}
        volumes = {v["name"]: v for v in spec["volumes"]}
        self.assertEqual(option_value(argv, "--name"), "$(NODE_NAME)")
        self.assertNotIn("--tls-cert", argv)
        self.assertNotIn("--tls-key", argv)
        self.assertNotIn("--token", argv)
        token_file = option_value(argv, "--bootstrap-token-file")
        token_vol = volumes[mounts[os.path.dirname(token_file)]]
        self.assertEqual(token_vol["secret"]["secretName"], "picket-bootstrap-token")
        self.assertEqual(token_vol["secret"]["items"],
                         [{"key": "token", "path": os.path.basename(token_file)}])
        ca_file = option_value(argv, "--ca")
        ca_vol = volumes[mounts[os.path.dirname(ca_file)]]
        self.assertEqual(ca_vol["configMap"]["name"], "picket-fleet-ca")
        self.assertEqual(ca_vol["configMap"]["items"],
                         [{"key": "ca.crt", "path": os.path.basename(ca_file)}])
        secrets = [v for v in spec["volumes"] if "secret" in v or "projected" in v]
        self.assertEqual([v["name"] for v in secrets], [token_vol["name"]],
                         "sensor pods mount a Secret other than the bootstrap token")
        for v in spec["volumes"]:
            for item in v.get("secret", v.get("configMap", {})).get("items", []):
                self.assertFalse(item["key"].endswith(".key"), "%s mounts a key" % v["name"])
        # The node's key and certificate are generated in the state directory, on the node.
        state = volumes[mounts[option_value(argv, "--state-dir")]]
        self.assertEqual(state["hostPath"], {"path": "/var/lib/picket/sensor",
                                             "type": "DirectoryOrCreate"})
        # The manager signs enrollments with the CA key from its own Secret.
        sts = self.one("Deployment", "picket-manager")
        mc = sts["spec"]["template"]["spec"]["containers"][0]
        ca_key = option_value(mc["command"] + mc["args"], "--ca-key")
        mmounts = {m["mountPath"]: m["name"] for m in mc["volumeMounts"]}
        mvol = [v for v in sts["spec"]["template"]["spec"]["volumes"]
                if v["name"] == mmounts[os.path.dirname(ca_key)]][0]
        self.assertEqual(mvol["secret"]["secretName"], "picket-manager-pki")
        # State and logs survive the pod: host paths.
        for flag in ("--state-dir", "-l"):
            d = option_value(argv, flag)
            vol = [v for v in spec["volumes"] if v["name"] == mounts[d]][0]
            self.assertIn("hostPath", vol, flag)


def unit_sections(text):
    """{section: [(key, value)]} of a systemd unit, continuation lines joined."""
    sections = {}
    cur = None
    logical = []
    buf = ""
    for line in text.split("\n"):
        if buf:
            buf += " " + line.strip()
        else:
            buf = line.strip()
        if buf.endswith("\\"):
            buf = buf[:-1].rstrip()
            continue
        logical.append(buf)
        buf = ""
    for line in logical:
        if not line or line.startswith(("#", ";")):
            continue
        if line.startswith("["):
            cur = line.strip("[]")
            sections.setdefault(cur, [])
            continue
        assert cur is not None, "key outside a section: " + line
        key, _, value = line.partition("=")
        sections[cur].append((key.strip(), value.strip()))
    return sections


def unit_values(sections, section, key):
    return [v for k, v in sections.get(section, []) if k == key]


def kustomize_objects(test, *parts):
    tool = shutil.which("kubectl")
    if not tool:
        skip(test, "kubectl")
    r = run([tool, "kustomize", path(*parts)], timeout=120)
    test.assertEqual(r.returncode, 0, r.stdout + r.stderr)
    return [o for o in yaml.safe_load_all(r.stdout) if o]


class KustomizePostgresTrial(unittest.TestCase):
    """deploy/k8s/postgres-trial: one PostgreSQL for trials, outside the base."""

    def test_objects(self):
        objs = kustomize_objects(self, "deploy", "k8s", "postgres-trial")
        self.assertEqual(sorted((o["kind"], o["metadata"]["name"]) for o in objs),
                         [("Service", "picket-postgres"), ("StatefulSet", "picket-postgres")])
        for o in objs:
            self.assertEqual(o["metadata"]["namespace"], "picket")
            self.assertEqual(o["metadata"]["labels"]["app.kubernetes.io/part-of"], "picket")
        sts = [o for o in objs if o["kind"] == "StatefulSet"][0]
        svc = [o for o in objs if o["kind"] == "Service"][0]
        self.assertEqual(sts["spec"]["replicas"], 1)
        self.assertEqual(sts["spec"]["serviceName"], svc["metadata"]["name"])
        spec = sts["spec"]["template"]["spec"]
        c = spec["containers"][0]
        self.assertRegex(c["image"], r"^postgres:15$")
        env = {e["name"]: e for e in c["env"]}
        self.assertEqual(env["POSTGRES_PASSWORD"]["valueFrom"],
                         {"secretKeyRef": {"name": "picket-postgres", "key": "password"}})
        # The data on the volume claim, in a subdirectory (lost+found).
        claims = [t["metadata"]["name"] for t in sts["spec"]["volumeClaimTemplates"]]
        mounts = {m["mountPath"]: m["name"] for m in c["volumeMounts"]}
        pgdata = env["PGDATA"]["value"]
        self.assertIn(mounts[os.path.dirname(pgdata)], claims)
        self.assertEqual([(p["port"], p["targetPort"]) for p in svc["spec"]["ports"]],
                         [(5432, "postgres")])
        self.assertEqual({p["name"]: p["containerPort"] for p in c["ports"]}, {"postgres": 5432})
        self.assertEqual(svc["spec"]["selector"], sts["spec"]["template"]["metadata"]["labels"])
        self.assertIs(spec["securityContext"]["runAsNonRoot"], True)
        self.assertIs(c["securityContext"]["readOnlyRootFilesystem"], True)
        self.assertEqual(c["securityContext"]["capabilities"], {"drop": ["ALL"]})
        # Not in the base render: production brings its own database.
        base = load_yaml("deploy", "k8s", "kustomization.yaml")
        self.assertEqual([r for r in base["resources"] if "postgres" in r], [])

    def test_migrate_job(self):
        objs = kustomize_objects(self, "deploy", "k8s", "migrate-from-sqlite")
        self.assertEqual([(o["kind"], o["metadata"]["name"]) for o in objs],
                         [("Job", "picket-manager-migrate")])
        job = objs[0]
        self.assertEqual(job["metadata"]["namespace"], "picket")
        spec = job["spec"]["template"]["spec"]
        c = spec["containers"][0]
        argv = c["command"] + c["args"]
        self.assertEqual(argv, ["picket-manager", "migrate", "--from",
                                "sqlite:" + manager_config()["db"]])
        env = {e["name"]: e for e in c["env"]}
        self.assertEqual(env["PICKET_DB_DSN"]["valueFrom"],
                         {"secretKeyRef": {"name": "picket-manager-db", "key": "dsn"}})
        # The SQLite StatefulSet's volume claim (template "data", pod picket-manager-0).
        mounts = {m["mountPath"]: m["name"] for m in c["volumeMounts"]}
        vol = [v for v in spec["volumes"]
               if v["name"] == mounts[os.path.dirname(manager_config()["db"])]][0]
        self.assertEqual(vol["persistentVolumeClaim"]["claimName"], "data-picket-manager-0")
        base = load_yaml("deploy", "k8s", "kustomization.yaml")
        self.assertEqual([r for r in base["resources"] if "migrate" in r], [])


class KustomizeSqlite(unittest.TestCase):
    """deploy/k8s-sqlite: the base with one manager on SQLite (a StatefulSet) instead."""

    def test_one_manager_on_sqlite(self):
        objs = kustomize_objects(self, "deploy", "k8s-sqlite")
        kinds = sorted((o["kind"], o["metadata"]["name"]) for o in objs
                       if o["kind"] not in ("ConfigMap", "Namespace"))
        self.assertEqual(kinds, [("DaemonSet", "picket-sensor"),
                                 ("Service", "picket-manager"),
                                 ("Service", "picket-manager-headless"),
                                 ("StatefulSet", "picket-manager")])
        for o in objs:
            if o["kind"] != "Namespace":
                self.assertEqual(o["metadata"]["namespace"], "picket")
        sts = [o for o in objs if o["kind"] == "StatefulSet"][0]
        self.assertEqual(sts["spec"]["replicas"], 1)
        self.assertEqual(sts["spec"]["serviceName"], "picket-manager-headless")
        spec = sts["spec"]["template"]["spec"]
        c = spec["containers"][0]
        argv = c["command"] + c["args"]
        self.assertEqual(set(flags_in(argv[1:])) - cli_flags("manager/main.cc"), set())
        self.assertNotIn("env", c)
        # deploy/manager.yaml as it is (its db:), from the base's hashed ConfigMap.
        mounts = {m["mountPath"]: m for m in c["volumeMounts"]}
        cm_mount = mounts["/etc/picket/manager.yaml"]
        self.assertEqual(cm_mount["subPath"], "manager.yaml")
        vol = [v for v in spec["volumes"] if v["name"] == cm_mount["name"]][0]
        cms = {o["metadata"]["name"]: o for o in objs if o["kind"] == "ConfigMap"}
        self.assertIn(vol["configMap"]["name"], cms)
        self.assertEqual(cms[vol["configMap"]["name"]]["data"]["manager.yaml"],
                         read("deploy", "manager.yaml"))
        # The volume claim holds the database's directory.
        db_dir = os.path.dirname(manager_config()["db"])
        claims = [t["metadata"]["name"] for t in sts["spec"]["volumeClaimTemplates"]]
        self.assertIn(mounts[db_dir]["name"], claims)
        # The same claim name as the migrate Job reads (data-picket-manager-0).
        self.assertEqual("%s-%s-0" % (mounts[db_dir]["name"], sts["metadata"]["name"]),
                         "data-picket-manager-0")
        self.assertEqual(option_value(argv, "--ca-key"), "/etc/picket/pki/ca.key")


class KustomizeMonitoring(unittest.TestCase):
    """deploy/k8s/monitoring: the Prometheus operator's objects, outside the base."""

    @classmethod
    def setUpClass(cls):
        cls.tool = shutil.which("kubectl")
        if cls.tool:
            cls.result = run([cls.tool, "kustomize", path("deploy", "k8s", "monitoring")],
                             timeout=120)

    def setUp(self):
        if not self.tool:
            skip(self, "kubectl")
        self.assertEqual(self.result.returncode, 0, self.result.stdout + self.result.stderr)
        self.objs = {o["kind"]: o for o in yaml.safe_load_all(self.result.stdout) if o}

    def test_objects(self):
        self.assertEqual(sorted(self.objs), ["PrometheusRule", "ServiceMonitor"])
        for o in self.objs.values():
            self.assertEqual(o["apiVersion"], "monitoring.coreos.com/v1")
            self.assertEqual(o["metadata"]["namespace"], "picket")
            self.assertEqual(o["metadata"]["labels"]["app.kubernetes.io/part-of"], "picket")
        # Kept out of the base: it applies on clusters without the operator's CRDs.
        base = load_yaml("deploy", "k8s", "kustomization.yaml")
        self.assertFalse([r for r in base["resources"] if "monitoring" in r])

    def test_service_monitor_selects_the_manager_metrics_port(self):
        sm = self.objs["ServiceMonitor"]["spec"]
        services = [d for d in yaml.safe_load_all(read("deploy", "k8s", "manager-service.yaml"))
                    if d]
        selected = [svc for svc in services
                    if sm["selector"]["matchLabels"].items() <= svc["metadata"]["labels"].items()]
        self.assertTrue(selected)
        self.assertEqual(len(sm["endpoints"]), 1)
        ep = sm["endpoints"][0]
        self.assertEqual(ep["path"], "/metrics")
        # The port name exists on the picket-manager Service, on the manager's metrics port.
        ports = {p["name"]: p["port"] for svc in selected for p in svc["spec"]["ports"]}
        self.assertEqual(ports[ep["port"]], MANAGER_METRICS_PORT)
        self.assertIn("picket-manager", [svc["metadata"]["name"] for svc in selected])

    def test_prometheus_rule_is_the_rule_file(self):
        rule = self.objs["PrometheusRule"]
        self.assertEqual(rule["spec"]["groups"],
                         load_yaml("deploy", "prometheus", "picket-alerts.yml")["groups"])


class Systemd(unittest.TestCase):
    UNITS = {
        "picket-manager.service": ("picket-manager", "manager/main.cc"),
        "picket-sensor@.service": ("picket-sensor", "sensor/engine/sensor_options.cc"),
    }

    def test_structure_and_flags(self):
        for unit, (binary, main_cc) in self.UNITS.items():
            s = unit_sections(read("deploy", "systemd", unit))
            self.assertEqual(sorted(s), ["Install", "Service", "Unit"], unit)
            self.assertEqual(unit_values(s, "Install", "WantedBy"), ["multi-user.target"], unit)
            self.assertEqual(unit_values(s, "Service", "User"), ["picket"], unit)
            self.assertEqual(unit_values(s, "Service", "RestartPreventExitStatus"), ["2"], unit)
            execs = unit_values(s, "Service", "ExecStart")
            self.assertEqual(len(execs), 1, unit)
            argv = shlex.split(execs[0])
            self.assertEqual(argv[0], "/usr/local/bin/" + binary, unit)
            flags = cli_flags(main_cc)
            self.assertEqual(set(flags_in(argv[1:])) - flags, set(), unit)
            self.assertTrue(option_value(argv, "-c").startswith("/etc/picket/"), unit)

    def test_manager_unit(self):
        s = unit_sections(read("deploy", "systemd", "picket-manager.service"))
        argv = shlex.split(unit_values(s, "Service", "ExecStart")[0])
        self.assertEqual(argv[1:], ["-c", "/etc/picket/manager.yaml"])
        # StateDirectory=picket is /var/lib/picket: the database's directory.
        self.assertEqual(unit_values(s, "Service", "StateDirectory"), ["picket"])
        self.assertEqual(os.path.dirname(manager_config()["db"]), "/var/lib/picket")

    def test_sensor_unit(self):
        s = unit_sections(read("deploy", "systemd", "picket-sensor@.service"))
        argv = shlex.split(unit_values(s, "Service", "ExecStart")[0])
        self.assertEqual(option_value(argv, "-c"), "/etc/picket/sensor.yaml")
        self.assertEqual(option_value(argv, "-i"), "%I")
        self.assertEqual(option_value(argv, "--capture"), "afpacket")
        self.assertEqual(option_value(argv, "--state-dir"), "/var/lib/picket/sensor-%I")
        self.assertEqual(unit_values(s, "Service", "StateDirectory"), ["picket/sensor-%I"])
        self.assertEqual(option_value(argv, "-l"), "/var/log/picket/%I")
        self.assertEqual(unit_values(s, "Service", "LogsDirectory"), ["picket/%I"])
        caps = set(unit_values(s, "Service", "AmbientCapabilities")[0].split())
        self.assertLessEqual({"CAP_NET_RAW", "CAP_NET_ADMIN"}, caps)
        self.assertEqual(set(unit_values(s, "Service", "CapabilityBoundingSet")[0].split()), caps)
        # Every ${VAR} of ExecStart has a default in the unit. An Environment= line holds
        # assignments separated by spaces, each one quoted when its value has spaces.
        env = dict(a.split("=", 1) for v in unit_values(s, "Service", "Environment")
                   for a in shlex.split(v))
        used = set(re.findall(r"\$\{?(\w+)\}?", unit_values(s, "Service", "ExecStart")[0]))
        self.assertEqual(used - set(env), set())
        self.assertEqual(port_of(env["PICKET_MANAGER"]), MANAGER_GRPC_PORT)
        # Both ways a sensor proves its name pass flags the sensor has.
        flags = cli_flags("sensor/engine/sensor_options.cc")
        self.assertEqual(flags_in(shlex.split(env["PICKET_CREDENTIALS"])),
                         ["--tls-cert", "--tls-key"])
        self.assertIn("--bootstrap-token-file", flags)

    def test_sensor_env_example(self):
        env = {}
        for line in read("deploy", "systemd", "picket-sensor.env").split("\n"):
            line = line.strip()
            if line and not line.startswith("#"):
                k, _, v = line.partition("=")
                env[k] = v
        self.assertEqual(port_of(env["PICKET_MANAGER"]), MANAGER_GRPC_PORT)
        # The recommended identity: enrollment with a bootstrap token (deploy/README.md).
        self.assertEqual(shlex.split(env["PICKET_CREDENTIALS"]),
                         ["--bootstrap-token-file", "/etc/picket/bootstrap.token"])
        args = shlex.split(env["PICKET_SENSOR_ARGS"])
        self.assertEqual(set(flags_in(args)) - cli_flags("sensor/engine/sensor_options.cc"), set())
        self.assertEqual(port_of(option_value(args, "--metrics-listen")), SENSOR_METRICS_PORT)

    def test_systemd_analyze_verify(self):
        tool = shutil.which("systemd-analyze")
        if not tool:
            skip(self, "systemd-analyze")
        with tempfile.TemporaryDirectory(prefix="picket-units-") as tmp:
            # The binaries are not installed here: point ExecStart at executable stubs so that
            # verify checks everything else.
            bindir = os.path.join(tmp, "bin")
            os.mkdir(bindir)
            for binary, _ in self.UNITS.values():
                stub = os.path.join(bindir, binary)
                with open(stub, "w") as f:
                    f.write("#!/bin/sh\nexit 0\n")
                os.chmod(stub, 0o755)
            for unit in self.UNITS:
                text = read("deploy", "systemd", unit).replace("/usr/local/bin/", bindir + "/")
                with open(os.path.join(tmp, unit), "w") as f:
                    f.write(text)
            for unit in ("picket-manager.service", "picket-sensor@eth0.service"):
                r = run([tool, "verify", os.path.join(tmp, unit)], cwd=tmp)
                out = r.stdout + r.stderr
                self.assertEqual(r.returncode, 0, out)
                # verify only warns about unknown keys and bad values: any line naming our
                # unit files is a finding.
                ours = [l for l in out.split("\n") if "picket-" in l]
                self.assertEqual(ours, [], unit)


class Dockerfile(unittest.TestCase):
    def test_sanity(self):
        # It cannot be built here (no Docker engine): check what can be checked offline.
        text = read("deploy", "Dockerfile")
        stages = re.findall(r"^FROM\s+(\S+)", text, re.M)
        self.assertEqual(stages, ["debian:12", "debian:12"])
        self.assertNotRegex(text, r"\b(curl|wget|pip|npm|go get|git clone)\b")
        self.assertIn("COPY deploy/manager.yaml deploy/sensor.yaml /etc/picket/", text)
        cmd = re.search(r'^CMD (\[.*\])$', text, re.M).group(1)
        self.assertEqual(yaml.safe_load(cmd), ["picket-manager", "-c", "/etc/picket/manager.yaml"])
        # Its packages come from deploy/install-deps.sh --build / --runtime: tests/deploy/
        # deps_test.py (ctest deploy_deps) checks those lists and how the Dockerfile uses them.


def main():
    global SOURCE, BUILD
    ap = argparse.ArgumentParser()
    ap.add_argument("--source", required=True, help="repository root")
    ap.add_argument("--build", help="build directory (for the picket-sensor load check)")
    args, rest = ap.parse_known_args()
    SOURCE = os.path.abspath(args.source)
    BUILD = os.path.abspath(args.build) if args.build else None
    picket_test.main([sys.argv[0]] + rest)


if __name__ == "__main__":
    main()
