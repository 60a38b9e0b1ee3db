#!/usr/bin/env python3
"""The real picket-sensor --list-keywords (sensor/engine/sensor_options.cc, list_keywords()).

- Exits 0 and prints nothing but LANGUAGE<TAB>NAME<TAB>KIND<TAB>STATUS lines: no header, four
  fields, a known language and status form, one line per (language, name).
- Names both languages: snort3 http_uri and suricata content are there.
- An unknown flag still fails (non-zero exit, an error naming it), with or without
  --list-keywords.
- docs/keywords.md is what the binary prints, as a table (regenerate it with --write after a
  keyword changes status).

Usage: list_keywords_cli_test.py --build BUILD_DIR
       list_keywords_cli_test.py --build BUILD_DIR --write   (rewrites docs/keywords.md)
"""
import os
import re
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "support"))
import picket_test  # noqa: E402  (tests/support: how a suite exits, skips apart)
import picket_e2e  # noqa: E402

STATUS = re.compile(r"^(supported|partly: .+|not supported: .+)$")
DOC = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "docs",
                   "keywords.md")
DOC_HEAD = """# Rule keywords: what Picket supports

Generated from `picket-sensor --list-keywords` (every Suricata 7 keyword, sticky buffer and
content modifier Picket knows of, and the Snort 3 front-end's options and buffers), by
`tests/sensor/detect/list_keywords_cli_test.py --build BUILD --write`; the test
`e2e_list_keywords_cli` fails when this page and the binary differ. Status: **supported**,
**partly** (what is missing), or **not supported** (the reason a rule using it is skipped, and
why). What each supported keyword does: [rules.md](rules.md).
"""


def render_doc(listing):
    """The Markdown page for --list-keywords output."""
    out = [DOC_HEAD]
    titles = {"suricata": "Suricata", "snort3": "Snort 3"}
    for lang in ("suricata", "snort3"):
        rows = [l.split("\t") for l in listing.splitlines() if l.startswith(lang + "\t")]
        counts = {}
        for _, _, _, status in rows:
            key = status.split(":")[0]
            counts[key] = counts.get(key, 0) + 1
        out.append("\n## %s (%s)\n" % (titles[lang], ", ".join(
            "%d %s" % (counts[k], k) for k in ("supported", "partly", "not supported")
            if k in counts)))
        out.append("| keyword | kind | status |")
        out.append("|---|---|---|")
        for _, name, kind, status in rows:
            out.append("| `%s` | %s | %s |" % (name, kind, status.replace("|", "\\|")))
    return "\n".join(out) + "\n"


def sensor(*args):
    return subprocess.run([picket_e2e.sensor_bin()] + list(args), capture_output=True,
                          text=True, timeout=60)


class ListKeywordsTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.run_ = sensor("--list-keywords")

    def test_exit_zero_and_tab_format(self):
        self.assertEqual(self.run_.returncode, 0, self.run_.stderr)
        lines = self.run_.stdout.splitlines()
        self.assertGreater(len(lines), 100)
        seen = set()
        for line in lines:
            fields = line.split("\t")
            self.assertEqual(len(fields), 4, repr(line))
            lang, name, kind, status = fields
            self.assertIn(lang, ("suricata", "snort3"), repr(line))
            self.assertTrue(name and kind, repr(line))
            self.assertRegex(status, STATUS, repr(line))
            self.assertNotIn((lang, name), seen, repr(line))
            seen.add((lang, name))
        # Header-less: the first line is a keyword, not column names.
        self.assertNotIn("LANGUAGE", lines[0])

    def test_both_languages_listed(self):
        lines = self.run_.stdout.splitlines()
        self.assertIn("snort3\thttp_uri\tsticky buffer\tsupported", lines)
        self.assertIn("suricata\tcontent\toption\tsupported", lines)
        self.assertTrue(any(l.startswith("snort3\tcontent.fast_pattern_offset\t") for l in lines))

    def test_the_keywords_page_is_what_the_binary_prints(self):
        with open(DOC) as f:
            doc = f.read()
        self.assertEqual(doc, render_doc(self.run_.stdout),
                         "docs/keywords.md is stale: rerun this test with --write")

    def test_unknown_flag_fails(self):
        for args in (["--no-such-flag"], ["--list-keywords", "--no-such-flag"]):
            r = sensor(*args)
            self.assertNotEqual(r.returncode, 0, args)
            self.assertIn("--no-such-flag", r.stderr + r.stdout, args)
            self.assertNotIn("snort3\thttp_uri", r.stdout, args)


def main():
    write = "--write" in sys.argv
    if write:
        sys.argv.remove("--write")
    _, argv = picket_e2e.parse_args()
    if write:
        r = sensor("--list-keywords")
        if r.returncode != 0:
            sys.exit("picket-sensor --list-keywords failed: " + r.stderr)
        with open(DOC, "w") as f:
            f.write(render_doc(r.stdout))
        print("wrote " + os.path.normpath(DOC))
        return
    picket_test.main(argv)


if __name__ == "__main__":
    main()
