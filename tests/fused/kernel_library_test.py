#!/usr/bin/env python3
"""The fused kernels live in one shared library (src/attention/fused/CMakeLists.txt): it holds the
kernels and exports only attnprof::fused:: (export_api.map); the bench plugin needs it and holds no
kernel of its own. Read off the binaries with binutils (nm, readelf).
  kernel_library_test.py LIBATTNPROF_FUSED_SO BENCH_PLUGIN_SO
"""
import subprocess
import sys

KERNEL = "fused_fwd_hopper<"  # the Hopper kernel template's host stubs, one per compiled kernel


def run(*cmd):
    return subprocess.run(cmd, capture_output=True, text=True, check=True).stdout


def main():
    lib, plugin = sys.argv[1], sys.argv[2]
    failures = []
    exported = [line.split(" ", 2)[2] for line in run("nm", "-DC", "--defined-only", lib).splitlines()
                if line.count(" ") >= 2]
    outside = [s for s in exported if not s.startswith("attnprof::fused::")]
    if not exported or outside:
        failures.append(f"{lib} exports {len(exported)} symbols, {len(outside)} outside attnprof::fused::: "
                        f"{outside[:3]}")
    kernels = sum(KERNEL in line for line in run("nm", "-C", lib).splitlines())
    if kernels == 0:
        failures.append(f"{lib} holds no {KERNEL}...> kernel")
    in_plugin = sum(KERNEL in line for line in run("nm", "-C", plugin).splitlines())
    if in_plugin:
        failures.append(f"{plugin} holds {in_plugin} {KERNEL}...> symbols of its own")
    if "[libattnprof_fused.so]" not in run("readelf", "-d", plugin):
        failures.append(f"{plugin} does not load libattnprof_fused.so")
    for f in failures:
        print("FAIL", f)
    if not failures:
        print(f"ok: {kernels} kernel symbols in the library, {len(exported)} exported, none in the plugin")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
