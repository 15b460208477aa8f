"""The training corpus: the Python standard library sources of the running interpreter.

Present on every machine that has Python, so training needs no download. The file list is
deterministic for a given Python version (sorted relative paths); the held-out split is by file,
chosen by a hash of the relative path, so adding or removing a file never moves another one
across the split.
"""
import hashlib
import sys
import sysconfig
from pathlib import Path

# Directories that are tests, generated tables or machine-specific configuration: they are
# either not representative Python (codec tables, pydoc's topic dump) or differ between
# installations of the same version (sysconfigdata, site-packages).
EXCLUDED_DIRS = {"site-packages", "test", "tests", "idle_test", "encodings", "pydoc_data",
                 "__pycache__"}
EXCLUDED_PREFIXES = ("_sysconfigdata", "config-")
HELDOUT_MODULUS = 20  # about 5 % of the files are held out


def stdlib_root():
    return Path(sysconfig.get_paths()["stdlib"])


def list_files(root=None):
    """Sorted relative paths (POSIX form) of the corpus files."""
    root = Path(root) if root else stdlib_root()
    out = []
    for p in root.rglob("*.py"):
        rel = p.relative_to(root)
        if any(part in EXCLUDED_DIRS or part.startswith(EXCLUDED_PREFIXES) for part in rel.parts):
            continue
        out.append(rel.as_posix())
    return sorted(out)


def is_heldout(rel):
    h = int(hashlib.sha256(rel.encode()).hexdigest()[:8], 16)
    return h % HELDOUT_MODULUS == 0


def read_text(root, rel):
    # A few stdlib files are Latin-1 or carry stray bytes; decoding with replacement keeps the
    # corpus a pure function of the file bytes.
    return (Path(root) / rel).read_bytes().decode("utf-8", errors="replace")


def load_split(root=None):
    """(train_docs, heldout_docs, info): lists of (relpath, text) and a description dict."""
    root = Path(root) if root else stdlib_root()
    files = list_files(root)
    train, held = [], []
    digest = hashlib.sha256()
    for rel in files:
        text = read_text(root, rel)
        digest.update(rel.encode() + b"\0" + text.encode() + b"\0")
        (held if is_heldout(rel) else train).append((rel, text))
    info = {
        "source": "Python standard library sources (*.py) of the training interpreter",
        "python": sys.version.split()[0],
        # Where the files come from, not this machine's path to them.
        "root": "sysconfig.get_paths()['stdlib']" if root == stdlib_root()
        else "a directory given to corpus.py",
        "excluded_dirs": sorted(EXCLUDED_DIRS),
        "excluded_prefixes": list(EXCLUDED_PREFIXES),
        "heldout_rule": f"int(sha256(relpath)[:8 hex], 16) % {HELDOUT_MODULUS} == 0",
        "files": len(files),
        "train_files": len(train),
        "heldout_files": len(held),
        "train_chars": sum(len(t) for _, t in train),
        "heldout_chars": sum(len(t) for _, t in held),
        "corpus_sha256": digest.hexdigest(),
    }
    return train, held, info
