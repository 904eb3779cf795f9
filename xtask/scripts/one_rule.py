"""The baseline `cargo xtask bench` compares `looprail audit` with: load every recorded run
under a directory and apply one OpenHands-style rule (the same tool call, name and arguments,
four times in a row). Prints how many runs the rule flags."""

import json
import os
import sys


def calls(messages):
    for message in messages:
        for call in message.get("tool_calls") or []:
            function = call.get("function", {})
            yield function.get("name"), function.get("arguments")


def flagged(messages, repeats=4):
    last, streak = None, 0
    for call in calls(messages):
        streak = streak + 1 if call == last else 1
        last = call
        if streak >= repeats:
            return True
    return False


def main(root):
    runs = hits = 0
    for folder, _, files in os.walk(root):
        for name in sorted(files):
            if not name.endswith(".json"):
                continue
            with open(os.path.join(folder, name), encoding="utf-8") as f:
                doc = json.load(f)
            runs += 1
            hits += flagged(doc.get("messages", []))
    print(f"{runs} runs, {hits} flagged")


if __name__ == "__main__":
    main(sys.argv[1])
