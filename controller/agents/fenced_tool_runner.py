"""Runs one file tool inside the fence, so the fence (not the controller) decides what it may touch.

Self-contained (stdlib only): its source is passed to `python -c`; the request arrives as JSON on
stdin and the reply leaves as one JSON object on stdout.
"""

import json
import os
import sys

LIST_LIMIT = 500


def read_file(request):
    with open(request["path"], encoding="utf-8", errors="replace") as handle:
        return handle.read()


def write_file(request):
    path = request["path"]
    parent = os.path.dirname(path)
    if parent:
        os.makedirs(parent, exist_ok=True)
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(request["content"])
    return f"wrote {len(request['content'])} characters to {path}"


def edit_file(request):
    path, old, new = request["path"], request["old"], request["new"]
    with open(path, encoding="utf-8") as handle:
        text = handle.read()
    count = text.count(old) if old else 0
    if count != 1:
        found = "not found" if count == 0 else f"found {count} times"
        raise ValueError(f"old text {found} in {path}; give a unique exact match")
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(text.replace(old, new, 1))
    return f"replaced 1 occurrence in {path}"


def list_directory(request):
    path = request.get("path") or "."
    names = []
    for entry in sorted(os.scandir(path), key=lambda item: item.name):
        suffix = "/" if entry.is_dir(follow_symlinks=False) else ""
        suffix = "@" if entry.is_symlink() else suffix
        names.append(entry.name + suffix)
    shown = names[:LIST_LIMIT]
    if len(names) > LIST_LIMIT:
        shown.append(f"... {len(names) - LIST_LIMIT} more entries")
    return "\n".join(shown)


TOOLS = {"read": read_file, "write": write_file, "edit": edit_file, "list": list_directory}


def main():
    request = json.loads(sys.stdin.read())
    try:
        output = TOOLS[request["tool"]](request)
        reply = {"ok": True, "output": output}
    except (OSError, ValueError, KeyError, UnicodeError) as error:
        reply = {"ok": False, "output": f"{type(error).__name__}: {error}"}
    sys.stdout.write(json.dumps(reply))


if __name__ == "__main__":
    main()
