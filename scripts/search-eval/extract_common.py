"""Helpers extract.py and extract_train.py share: a file of a fetched git
repository, and a set file written as sorted-key JSON lines."""
import json, os, subprocess


def show(git_dir, path):
    return subprocess.run(
        ["git", "--git-dir", git_dir, "show", f"HEAD:{path}"],
        check=True, capture_output=True, text=True,
    ).stdout


def git_dir(path):
    return path if os.path.isdir(os.path.join(path, "objects")) else os.path.join(path, ".git")


def write(out, name, rows):
    with open(os.path.join(out, name), "w") as f:
        for row in rows:
            f.write(json.dumps(row, ensure_ascii=False, sort_keys=True) + "\n")
