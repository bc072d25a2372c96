#!/usr/bin/python3
"""Renders every probes/*.jinja with Python Jinja2 configured as Hugging Face transformers'
apply_chat_template configures it, and writes the outputs to expected.json, which
tests/engine/jinja/probe_tests.cpp compares Loom's renders with (no Python at test time).

Run with Debian's python3 and python3-jinja2 (scripts/setup.sh installs it):
    /usr/bin/python3 tests/engine/jinja/probes/generate.py
The variables are context.json's, plus raise_exception and strftime_now on the fixed time
2026-12-01 00:00:00 (as in ../shared/fixtures/chat-templates)."""
import datetime
import json
import os
import sys

import jinja2
from jinja2 import nodes
from jinja2.ext import Extension
from jinja2.sandbox import ImmutableSandboxedEnvironment

HERE = os.path.dirname(os.path.abspath(__file__))
NOW = datetime.datetime(2026, 12, 1, 0, 0, 0)


class TemplateError(Exception):
    pass


def raise_exception(message):
    raise TemplateError(message)


def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
    # transformers' own tojson: json.dumps, not Jinja2's HTML-safe one.
    return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators,
                      sort_keys=sort_keys)


def strftime_now(format):
    return NOW.strftime(format)


class GenerationTag(Extension):
    """{% generation %}...{% endgeneration %} renders its body, as transformers' AssistantTracker
    does (which also records where the body went; the text is the same)."""
    tags = {"generation"}

    def parse(self, parser):
        lineno = next(parser.stream).lineno
        body = parser.parse_statements(("name:endgeneration",), drop_needle=True)
        return nodes.CallBlock(self.call_method("_render", []), [], [], body).set_lineno(lineno)

    def _render(self, caller):
        return caller()


def environment():
    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                        extensions=[GenerationTag, jinja2.ext.loopcontrols])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = strftime_now
    return env


def main():
    env = environment()
    with open(os.path.join(HERE, "context.json"), encoding="utf-8") as f:
        context = json.load(f)
    expected = {}
    for name in sorted(os.listdir(HERE)):
        if not name.endswith(".jinja"):
            continue
        with open(os.path.join(HERE, name), encoding="utf-8", newline="") as f:
            source = f.read()
        try:
            expected[name] = {"output": env.from_string(source).render(**context)}
        except TemplateError as e:
            expected[name] = {"raised": str(e)}
        except Exception as e:  # noqa: BLE001 - any other failure: Loom must fail too
            expected[name] = {"error": f"{type(e).__name__}: {e}"}
    with open(os.path.join(HERE, "expected.json"), "w", encoding="utf-8") as f:
        json.dump({"jinja2": jinja2.__version__, "probes": expected}, f, ensure_ascii=False,
                  indent=1, sort_keys=True)
        f.write("\n")
    print(f"{len(expected)} probes rendered with Jinja2 {jinja2.__version__}", file=sys.stderr)


if __name__ == "__main__":
    main()
