#!/usr/bin/env python3
"""chat: the skill that faces the user.

The kernel runs it as `python3 main.py` with one JSON request on stdin and
reads one JSON answer from stdout (docs/lumen.md, "Skills"). Edit it freely:
it is yours, like every file of the instance.
"""
import json
import sys

HELP = """chat: say something to the person at the terminal.

Use it to reply to the user, to ask them a question, or to tell them what you did.
Input:  {"message": "the text to say"}
Output: {"delivered": "the text said"}; the text is shown to the user."""


def main():
    if "--help" in sys.argv[1:]:
        print(HELP)
        return 0
    try:
        request = json.load(sys.stdin)
    except json.JSONDecodeError as e:
        print(json.dumps({"ok": False, "error": "stdin is not JSON: %s" % e}))
        return 0
    given = request.get("input")
    message = given.get("message") if isinstance(given, dict) else given
    if not isinstance(message, str) or not message.strip():
        print(json.dumps({"ok": False, "error": 'chat needs input {"message": "text"}; got %s' % json.dumps(given)}))
        return 0
    print(json.dumps({"ok": True, "output": {"delivered": message}, "display": message}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
