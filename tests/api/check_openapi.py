#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Checks api/openapi.yaml (test 0508-api-openapi, `make api-check`).

Run with the venv of tests/api/requirements.txt (`make api-tools`):

    check_openapi.py FILE

What it checks:

* the document is valid OpenAPI (openapi-spec-validator, the version pinned
  in tests/api/requirements.txt);
* every operation has an operationId, and no two share one;
* every error answer (4xx, 5xx) of every operation is JSON of the one
  schema components/schemas/Error, which is what the server sends
  (src/api.c, reply_err and answer_lookup): an object of exactly two
  strings, code and message;
* every operation documents its 405, with the Allow header the server
  sends;
* no text in it speaks of how it was made (issue numbers, session or dated
  remarks, commit hashes): it describes the API, for its users.

Prints one line per problem and exits 1 when there is any.
"""
import re
import sys

import yaml
from openapi_spec_validator import validate
from openapi_spec_validator.readers import read_from_filename

METHODS = ("get", "put", "post", "delete", "patch", "head", "options")
ERROR_REF = "#/components/schemas/Error"

# Words of a lab notebook, not of an API description.
PROCESS_WORDS = [
    (re.compile(r"\bissues?\s*#?\d+", re.I), "an issue number"),
    (re.compile(r"#\d{1,5}\b"), "an issue number"),
    (re.compile(r"\bseed(ed|s)?\b", re.I), "'seed'"),
    (re.compile(r"\b(this|last|next|a later|an earlier) session\b", re.I), "a session remark"),
    (re.compile(r"\b(today|yesterday|for now|as of now|so far)\b", re.I), "a dated remark"),
    (re.compile(r"\b(19|20)\d\d-\d\d-\d\d\b"), "a date"),
    (re.compile(r"\b(TODO|FIXME|XXX)\b"), "a to-do"),
    (re.compile(r"\b(?=[0-9a-f]*[a-f])(?=[0-9a-f]*[0-9])[0-9a-f]{7,40}\b"), "a commit hash"),
    (re.compile(r"\bcommit\s+[0-9a-f]{7,}", re.I), "a commit hash"),
]


def resolve(doc, node):
    """node with its $ref followed (local references only)."""
    seen = 0
    while isinstance(node, dict) and "$ref" in node:
        ref = node["$ref"]
        if not ref.startswith("#/"):
            raise ValueError("not a local reference: " + ref)
        node = doc
        for part in ref[2:].split("/"):
            node = node[part.replace("~1", "/").replace("~0", "~")]
        seen += 1
        if seen > 20:
            raise ValueError("a reference loop at " + ref)
    return node


def strings(node, where=""):
    """Every string value in node, with where it is."""
    if isinstance(node, str):
        yield where, node
    elif isinstance(node, dict):
        for k, v in node.items():
            yield from strings(v, f"{where}/{k}")
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from strings(v, f"{where}/{i}")


def check(path):
    problems = []
    spec, _ = read_from_filename(path)
    try:
        validate(spec)
    except Exception as e:  # the validator's own error, said whole
        problems.append(f"not valid OpenAPI: {e}")
        return problems
    with open(path, encoding="utf-8") as f:
        doc = yaml.safe_load(f)

    err = doc.get("components", {}).get("schemas", {}).get("Error")
    if not err:
        problems.append("components/schemas/Error is missing")
    else:
        props = err.get("properties", {})
        if (sorted(props) != ["code", "message"] or sorted(err.get("required", [])) != ["code", "message"]
                or err.get("additionalProperties") is not False
                or any(resolve(doc, p).get("type") != "string" for p in props.values())):
            problems.append("components/schemas/Error is not exactly {code: string, message: string}, both required")

    op_ids = {}
    for p, item in doc.get("paths", {}).items():
        for m in METHODS:
            op = item.get(m)
            if op is None:
                continue
            name = f"{m.upper()} {p}"
            oid = op.get("operationId")
            if not oid:
                problems.append(f"{name}: no operationId")
            elif oid in op_ids:
                problems.append(f"{name}: operationId {oid} is also {op_ids[oid]}'s")
            else:
                op_ids[oid] = name
            responses = op.get("responses", {})
            if "405" not in responses:
                problems.append(f"{name}: no 405 response")
            for status, resp in responses.items():
                r = resolve(doc, resp)
                if str(status) == "405" and "Allow" not in r.get("headers", {}):
                    problems.append(f"{name}: its 405 has no Allow header")
                if not str(status)[0] in "45":
                    continue
                schema = r.get("content", {}).get("application/json", {}).get("schema", {})
                if schema.get("$ref") != ERROR_REF:
                    problems.append(f"{name}: its {status} is not the Error schema")

    for where, text in strings(doc):
        for rx, what in PROCESS_WORDS:
            m = rx.search(text)
            if m:
                problems.append(f"{where}: {what} ({m.group(0)!r}): describe the API, not its making")
    return problems


def main():
    if len(sys.argv) != 2:
        print("usage: check_openapi.py FILE", file=sys.stderr)
        return 2
    problems = check(sys.argv[1])
    for p in problems:
        print(f"{sys.argv[1]}: {p}")
    if problems:
        return 1
    print(f"{sys.argv[1]}: valid OpenAPI; operationIds, the Error schema, 405 with Allow: ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
