#!/usr/bin/env bash
# Make the release tarball of spmdarray X.Y.Z from the git tag vX.Y.Z and print its sha256.
#
#   git tag -a v0.1.0 -m "spmdarray 0.1.0"     # on the commit to release (CMakeLists.txt says 0.1.0)
#   ./scripts/release.sh 0.1.0 --update-recipe
#
# Writes DIST/spmdarray-X.Y.Z.tar.gz (`git archive` of the tag, top folder spmdarray-X.Y.Z/,
# gzip -n: the same tag always gives the same bytes), prints the file, its sha256, the URL it
# must be uploaded to (an asset of the GitHub release vX.Y.Z: the Spack recipe's `url`) and the
# recipe's version() line. --update-recipe adds that line to the Spack recipe (or replaces the
# line of the same version); commit it after uploading the tarball.
#
# Options:
#   --ref REF              archive REF instead of the tag (a trial run; nothing is released)
#   --out DIST             output folder (default: <repo>/dist)
#   --update-recipe        add the version() line to spack/spack_repo/spmdarray/packages/spmdarray/package.py
#   --recipe FILE          the recipe file --update-recipe edits (default: the one above)
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
die() { printf '[spmd release] error: %s\n' "$*" >&2; exit 1; }

ref="" out="$root/dist" update=0
recipe="$root/spack/spack_repo/spmdarray/packages/spmdarray/package.py"
version=""
while (($#)); do
  case $1 in
    --ref) ref=${2:?--ref needs a value}; shift 2 ;;
    --out) out=${2:?--out needs a value}; shift 2 ;;
    --update-recipe) update=1; shift ;;
    --recipe) recipe=${2:?--recipe needs a value}; shift 2 ;;
    -h|--help) sed -n '2,/^set -e/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    -*) die "unknown option $1" ;;
    *) [[ -z "$version" ]] || die "one version, please"; version=$1; shift ;;
  esac
done
[[ "$version" =~ ^[0-9]+\.[0-9]+\.[0-9]+$ ]] || die "usage: release.sh X.Y.Z [--update-recipe] [--ref REF] [--out DIST]"
ref=${ref:-v$version}
git -C "$root" rev-parse -q --verify "$ref^{commit}" >/dev/null ||
  die "no tag or commit '$ref' (tag the release first: git tag -a v$version -m 'spmdarray $version')"

# The tree being released must call itself X.Y.Z (CMake project version -> spmdarrayConfigVersion).
tree_version=$(git -C "$root" show "$ref:CMakeLists.txt" | sed -nE 's/^project\(spmdarray VERSION ([0-9.]+).*/\1/p')
[[ "$tree_version" == "$version" ]] ||
  die "CMakeLists.txt at $ref says project VERSION '$tree_version', not $version"

name="spmdarray-$version"
mkdir -p "$out"
tarball="$out/$name.tar.gz"
git -C "$root" archive --format=tar --prefix="$name/" "$ref" | gzip -n -9 >"$tarball.tmp"
mv "$tarball.tmp" "$tarball"
sha=$(sha256sum "$tarball" | cut -d' ' -f1)
line="    version(\"$version\", sha256=\"$sha\")"

echo "tarball: $tarball ($(git -C "$root" rev-parse --short "$ref^{commit}"))"
echo "sha256:  $sha"
echo "upload:  https://github.com/spmdarray/spmdarray/releases/download/v$version/$name.tar.gz"
echo "recipe:  $line"

if ((update)); then
  [[ -f "$recipe" ]] || die "no recipe at $recipe"
  marker='# Released versions'
  grep -q "$marker" "$recipe" || die "$recipe has no '$marker' line to add versions under"
  tmp=$(mktemp)
  # Drop an existing line of this version, then add the new one right under the marker (newest first).
  grep -v "^    version(\"$version\"," "$recipe" |
    awk -v m="$marker" -v l="$line" '{ print } index($0, m) { print l }' >"$tmp"
  cat "$tmp" >"$recipe"
  rm -f "$tmp"
  echo "updated: $recipe"
fi
