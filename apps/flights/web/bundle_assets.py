#!/usr/bin/env python3
"""Bundles the flights page's third-party files from the npm registry.

    bundle_assets.py --out DIR [--cache DIR]

writes DIR/vendor/states-10m.json (us-atlas: the states as TopoJSON) and
DIR/vendor/topojson-client.min.js (decodes it in the page). The tarballs are
pinned by version and by the sha512 integrity the registry publishes, cached in
--cache (default .cache/npm beside this repository's root), and checked before
use; nothing is fetched when the page runs.
"""
import argparse
import base64
import hashlib
import io
import os
import sys
import tarfile
import urllib.request

PACKAGES = {
    "us-atlas": ("3.0.1",
                 "sha512-wEIZCq0ImPvGblTd8gZMqNNCPkQshugMUG/8nkSWXb02+XqNFREg9atHOKP9w6prLZTpqcLhSvdBW81MkV3/0Q==",
                 ["package/states-10m.json", "package/LICENSE"]),
    "topojson-client": ("3.1.0",
                        "sha512-605uxS6bcYxGXw9qi62XyrV6Q3xwbndjachmNxu8HWTtVPxZfEJN9fd/SZS1Q54Sn2y0TMyMxFj/cJINqGHrKw==",
                        ["package/dist/topojson-client.min.js", "package/LICENSE"]),
}
REGISTRY = os.environ.get("NPM_REGISTRY", "https://registry.npmjs.org")


def tarball(name, version, integrity, cache):
    path = os.path.join(cache, f"{name}-{version}.tgz")
    algorithm, expected = integrity.split("-", 1)
    if os.path.exists(path):
        data = open(path, "rb").read()
    else:
        url = f"{REGISTRY}/{name}/-/{name}-{version}.tgz"
        try:
            with urllib.request.urlopen(url, timeout=60) as response:
                data = response.read()
        except OSError as problem:
            sys.exit(f"bundle_assets: cannot download {url}: {problem}")
    digest = base64.b64encode(hashlib.new(algorithm, data).digest()).decode()
    if digest != expected:
        sys.exit(f"bundle_assets: {name}-{version}.tgz does not match its pinned {algorithm} integrity")
    os.makedirs(cache, exist_ok=True)
    with open(path, "wb") as out:
        out.write(data)
    return data


def main():
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", required=True)
    parser.add_argument("--cache", default=os.path.join(root, ".cache", "npm"))
    args = parser.parse_args()
    vendor = os.path.join(args.out, "vendor")
    os.makedirs(vendor, exist_ok=True)
    for name, (version, integrity, members) in PACKAGES.items():
        with tarfile.open(fileobj=io.BytesIO(tarball(name, version, integrity, args.cache)), mode="r:gz") as archive:
            for member in members:
                base = os.path.basename(member)
                target = os.path.join(vendor, f"{name}.LICENSE" if base == "LICENSE" else base)
                with open(target, "wb") as out:
                    out.write(archive.extractfile(member).read())
    print(f"bundle_assets: us-atlas and topojson-client in {vendor}")


if __name__ == "__main__":
    main()
