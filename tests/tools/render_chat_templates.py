#!/usr/bin/env python3
"""Renders every conversation of the chat template corpus through every template with
Python's jinja2, configured exactly as Hugging Face transformers configures it for
apply_chat_template. The C++ test (tests/tokenizer/chat_template_corpus_test.cpp)
renders the same with our interpreter and requires identical text (or an error on
both sides, with the same message when the template raised it).

    render_chat_templates.py --corpus tests/data/chat_templates/conversations.json \\
        --templates tests/data/chat_templates tests/data/reference/chat_templates \\
        --gguf models/SmolLM2-135M-Instruct.Q4_1.gguf --out renders.json

Templates are named by where they come from: "<directory name>/<file stem>" for .jinja
files, "gguf/<file stem>" for a model's tokenizer.chat_template. A missing GGUF is
skipped (the C++ test skips it too). The output records each template's source, so
the C++ test can tell a stale file from a real difference.
"""
import argparse
import json
import os
import struct
import sys
from datetime import datetime

import jinja2
import jinja2.ext
import jinja2.nodes
from jinja2.sandbox import ImmutableSandboxedEnvironment


def hf_environment(now):
    """The environment of transformers' _compile_jinja_template, with the clock fixed."""

    class AssistantTracker(jinja2.ext.Extension):
        # {% generation %} marks assistant text for masks; rendering is unchanged.
        tags = {"generation"}

        def parse(self, parser):
            lineno = next(parser.stream).lineno
            body = parser.parse_statements(["name:endgeneration"], drop_needle=True)
            return jinja2.nodes.CallBlock(self.call_method("_generation_support"), [], [], body).set_lineno(lineno)

        def _generation_support(self, caller):
            return caller()

    def raise_exception(message):
        raise jinja2.exceptions.TemplateError(message)

    def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
        return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)

    def strftime_now(format):
        return datetime.fromtimestamp(now).strftime(format)

    env = ImmutableSandboxedEnvironment(
        trim_blocks=True, lstrip_blocks=True, extensions=[AssistantTracker, jinja2.ext.loopcontrols])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = strftime_now
    return env


def gguf_chat_template(path):
    """tokenizer.chat_template from a GGUF file's metadata, or None."""
    with open(path, "rb") as f:
        data = f.read()
    if data[:4] != b"GGUF":
        raise ValueError(f"{path}: not a GGUF file")
    pos = 8  # magic, version
    _, n_kv = struct.unpack_from("<QQ", data, pos)
    pos += 16
    scalar = {0: "B", 1: "b", 2: "H", 3: "h", 4: "I", 5: "i", 6: "f", 7: "?", 10: "Q", 11: "q", 12: "d"}

    def read_string(pos):
        (n,) = struct.unpack_from("<Q", data, pos)
        return data[pos + 8:pos + 8 + n].decode("utf-8"), pos + 8 + n

    def skip_value(kind, pos):
        if kind in scalar:
            return pos + struct.calcsize("<" + scalar[kind])
        if kind == 8:
            return read_string(pos)[1]
        if kind == 9:
            item_kind, count = struct.unpack_from("<IQ", data, pos)
            pos += 12
            if item_kind in scalar:
                return pos + count * struct.calcsize("<" + scalar[item_kind])
            for _ in range(count):
                pos = skip_value(item_kind, pos)
            return pos
        raise ValueError(f"{path}: unknown GGUF value type {kind}")

    for _ in range(n_kv):
        key, pos = read_string(pos)
        (kind,) = struct.unpack_from("<I", data, pos)
        pos += 4
        if key == "tokenizer.chat_template" and kind == 8:
            return read_string(pos)[0]
        pos = skip_value(kind, pos)
    return None


def load_templates(directories, ggufs):
    templates = {}
    for directory in directories:
        # "data/x", "reference/x": named after the folder that holds chat_templates/.
        prefix = os.path.basename(os.path.dirname(os.path.normpath(os.path.abspath(directory))))
        for name in sorted(os.listdir(directory)):
            if name.endswith(".jinja"):
                with open(os.path.join(directory, name), encoding="utf-8", newline="") as f:
                    templates[f"{prefix}/{name[:-len('.jinja')]}"] = f.read()
    for path in ggufs:
        if not os.path.exists(path):
            print(f"render_chat_templates: {path} is absent: skipping its template", file=sys.stderr)
            continue
        source = gguf_chat_template(path)
        if source is not None:
            templates["gguf/" + os.path.basename(path)[:-len(".gguf")]] = source
    return templates


def render_all(templates, corpus):
    env = hf_environment(corpus["now"])
    result = {}
    for name, source in templates.items():
        renders = {}
        try:
            template = env.from_string(source)
        except jinja2.exceptions.TemplateSyntaxError as error:
            result[name] = {"source": source, "syntax_error": str(error), "renders": {}}
            continue
        for conversation in corpus["conversations"]:
            variables = {"tools": None, "documents": None}
            variables.update(corpus.get("variables", {}))
            variables.update(conversation.get("extra", {}))
            for add_generation_prompt in (False, True):
                key = f"{conversation['name']}/{'prompt' if add_generation_prompt else 'no-prompt'}"
                try:
                    text = template.render(messages=conversation["messages"],
                                           add_generation_prompt=add_generation_prompt, **variables)
                    renders[key] = {"text": text}
                except jinja2.exceptions.TemplateError as error:
                    # raise_exception() raises TemplateError itself; jinja2's own errors
                    # are subclasses.
                    raised = type(error) is jinja2.exceptions.TemplateError
                    renders[key] = {"error": str(error), "raised": raised}
                except Exception as error:  # TypeError and the like, from the template's code
                    renders[key] = {"error": f"{type(error).__name__}: {error}", "raised": False}
        result[name] = {"source": source, "renders": renders}
    return result


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", required=True)
    parser.add_argument("--templates", nargs="*", default=[], help="directories of .jinja files")
    parser.add_argument("--gguf", nargs="*", default=[], help="models whose chat template to render")
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    with open(args.corpus, encoding="utf-8") as f:
        corpus = json.load(f)
    templates = load_templates(args.templates, args.gguf)
    output = {"jinja2_version": jinja2.__version__, "templates": render_all(templates, corpus)}
    with open(args.out, "w", encoding="utf-8") as f:
        json.dump(output, f, ensure_ascii=False, indent=1)
    count = sum(len(t["renders"]) for t in output["templates"].values())
    print(f"render_chat_templates: {len(templates)} templates, {count} renders -> {args.out}")


if __name__ == "__main__":
    main()
