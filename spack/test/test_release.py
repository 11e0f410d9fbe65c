#!/usr/bin/env python3
"""scripts/release.sh and the Spack recipe agree: a trial release of HEAD (--ref HEAD) gives a
reproducible tarball spmdarray-X.Y.Z.tar.gz (X.Y.Z = the CMake project version) with the sources
under spmdarray-X.Y.Z/, its printed sha256 is the file's, the upload URL is the recipe's
url_for_version(X.Y.Z), and --update-recipe adds a version() line that the recipe (loaded through
spack_standin.py) then declares. Wrong versions and missing tags are refused.
Exit 77 (ctest: skipped) outside a git checkout, e.g. in an unpacked release tarball.
"""

import hashlib
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
RECIPE = os.path.join(ROOT, "spack", "spack_repo", "spmdarray", "packages", "spmdarray", "package.py")
sys.path.insert(0, HERE)
import spack_standin as sd  # noqa: E402

failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what)


def release(*args):
    return subprocess.run([os.path.join(ROOT, "scripts", "release.sh"), *args], capture_output=True, text=True)


def main():
    try:
        in_git = subprocess.run(["git", "-C", ROOT, "rev-parse", "HEAD"], capture_output=True).returncode == 0
    except FileNotFoundError:
        in_git = False
    if not in_git:
        print("not a git checkout (or no git): nothing to release from; skipped")
        return 77
    cmake = open(os.path.join(ROOT, "CMakeLists.txt")).read()
    version = re.search(r"^project\(spmdarray VERSION ([0-9.]+)", cmake, re.M).group(1)
    name = f"spmdarray-{version}"
    with tempfile.TemporaryDirectory() as tmp:
        recipe = os.path.join(tmp, "package.py")
        shutil.copy(RECIPE, recipe)
        shas = []
        for out in ("a", "b"):
            r = release(version, "--ref", "HEAD", "--out", os.path.join(tmp, out), "--update-recipe", "--recipe", recipe)
            check(r.returncode == 0, f"release.sh {version} --ref HEAD: {r.stderr}")
            tarball = os.path.join(tmp, out, name + ".tar.gz")
            check(os.path.isfile(tarball), f"{tarball} written")
            if r.returncode or not os.path.isfile(tarball):
                break
            printed = re.search(r"^sha256:\s+([0-9a-f]{64})$", r.stdout, re.M)
            real = hashlib.sha256(open(tarball, "rb").read()).hexdigest()
            check(printed and printed.group(1) == real, f"printed sha256 is the file's ({real})")
            shas.append(real)
            upload = re.search(r"^upload:\s+(\S+)$", r.stdout, re.M)
        check(len(shas) == 2 and shas[0] == shas[1], f"the same commit gives the same tarball: {shas}")
        if len(shas) == 2:
            with tarfile.open(tarball) as t:
                names = t.getnames()
            check(all(n == name or n.startswith(name + "/") for n in names), f"everything under {name}/")
            for f in ("CMakeLists.txt", "include/spmd.hpp", "tests/consumer/CMakeLists.txt",
                      "cmake/spmdarrayConfig.cmake.in", "scripts/setup.sh"):
                check(f"{name}/{f}" in names, f"{f} in the tarball")
            check(not any(re.match(rf"{name}/(build[^/]*|dist|\.git)(/|$)", n) for n in names),
                  "no build folders, dist or .git in the tarball")
            # The recipe: the new version with this sha256, its URL the printed upload URL.
            cls = sd.load_recipe(recipe)
            check(cls.versions().get(version, {}).get("sha256") == shas[0], f"recipe declares {version} with the sha256")
            check(list(cls.versions())[:2] == ["main", version], f"versions in order {list(cls.versions())}")
            check(sum(1 for l in open(recipe) if l.strip().startswith(f'version("{version}"')) == 1,
                  "running it twice leaves one version line")
            url = cls.url_for_version(version)
            check(upload and upload.group(1) == url, f"upload URL {upload and upload.group(1)} == recipe url {url}")
            check(url.endswith("/" + name + ".tar.gz"), f"url names the tarball: {url}")
        r = release("9.9.9", "--ref", "HEAD", "--out", os.path.join(tmp, "c"))
        check(r.returncode != 0 and "not 9.9.9" in r.stderr, f"a version the tree does not say is refused: {r.stderr}")
        r = release("0.0.0", "--out", os.path.join(tmp, "c"))
        check(r.returncode != 0 and "tag" in r.stderr, f"a version without a tag is refused: {r.stderr}")
    if failures:
        print(f"{len(failures)} check(s) failed")
        return 1
    print(f"release.sh: {name}.tar.gz reproducible ({shas[0][:12]}...), recipe and url consistent")
    return 0


if __name__ == "__main__":
    sys.exit(main())
