"""The PEP 517 build backend of the oloproof source distribution: maturin's, behind one check.

``pyproject.toml`` names it (``build-backend = "oloproof_build"``, ``backend-path =
["build_backend"]``; the sdist carries this folder). Every hook is maturin's, except that the
hooks building a wheel first check that a Rust toolchain is there to build one: ``pip install
oloproof`` falls back to the sdist only on a platform without a prebuilt wheel (or with
``--no-binary``), and there, without ``cargo`` on ``PATH``, maturin would either stop with a
message about compiling "extensions" or download and install a Rust toolchain into a temporary
folder (its ``puccinialin`` fallback) and then compile the whole binary for minutes. Instead
the build stops at once, before installing any build requirement, saying what exists::

    oloproof has no prebuilt wheel for macosx_14_0_arm64; wheels exist for manylinux_2_34_x86_64
    (Linux x86_64, glibc 2.34 or newer); install a Rust toolchain (rustup) to build from source

The check runs in ``get_requires_for_build_wheel`` (pip's first hook with build isolation) and
again in ``prepare_metadata_for_build_wheel`` and ``build_wheel`` (the first ones without it),
and their editable twins. Building the sdist itself needs cargo as maturin does (it reads the
workspace with ``cargo metadata``). Standard library only; maturin is imported when a hook
runs, so the message needs nothing installed.
"""

import os
import platform
import shutil
import subprocess
import sys
import sysconfig

#: The platforms oloproof publishes wheels for: (wheel platform tag, in words). Keep in step
#: with the wheels the release builds (docs/wheel.md, "Publishing").
WHEELS = (("manylinux_2_34_x86_64", "Linux x86_64, glibc 2.34 or newer"),)

#: For tests of the message: the platform tag to report instead of this machine's.
ENV_PLATFORM = "OLOPROOF_BUILD_PLATFORM_TAG"


def platform_tag():
    """This machine's most specific wheel platform tag: ``manylinux_2_36_x86_64`` on a glibc
    Linux (the glibc it runs), else ``sysconfig.get_platform()`` as a tag
    (``macosx_14_0_arm64``, ``win_amd64``, ``linux_aarch64`` on musl)."""
    forced = os.environ.get(ENV_PLATFORM)
    if forced:
        return forced
    plat = sysconfig.get_platform().replace("-", "_").replace(".", "_")
    if plat.startswith("linux_"):
        libc, version = platform.libc_ver()
        parts = version.split(".")
        if libc == "glibc" and len(parts) >= 2 and parts[0].isdigit() and parts[1].isdigit():
            return "manylinux_%s_%s_%s" % (parts[0], parts[1], plat[len("linux_"):])
    return plat


def _covered(tag):
    """Whether a published wheel installs on a machine of platform ``tag``."""
    for wheel, _ in WHEELS:
        if wheel == tag:
            return True
        if wheel.startswith("manylinux_") and tag.startswith("manylinux_"):
            w, t = wheel.split("_", 3), tag.split("_", 3)
            if w[3] == t[3] and (int(t[1]), int(t[2])) >= (int(w[1]), int(w[2])):
                return True
    return False


def message(tag):
    """What the build says when it cannot build: the platform, the wheels that exist, the fix."""
    wheels = ", ".join("%s (%s)" % w for w in WHEELS)
    fix = "install a Rust toolchain (rustup) to build from source"
    home_cargo = os.path.join(os.path.expanduser("~"), ".cargo", "bin")
    if os.path.isfile(os.path.join(home_cargo, "cargo")):
        fix = "put %s on PATH (cargo is there) to build from source" % home_cargo
    if _covered(tag):
        return (
            "oloproof's prebuilt wheel covers %s, but pip is building the source distribution "
            "(--no-binary, or no wheel of this version); wheels exist for %s; %s, or let pip "
            "install the wheel" % (tag, wheels, fix)
        )
    return "oloproof has no prebuilt wheel for %s; wheels exist for %s; %s" % (tag, wheels, fix)


def _check_toolchain():
    """Stops the build at once (exit 1, the message on stderr) when ``cargo`` is not on
    ``PATH`` or does not run."""
    cargo = shutil.which("cargo")
    works = False
    if cargo is not None:
        try:
            out = subprocess.run([cargo, "--version"], capture_output=True, check=False, timeout=60)
            works = out.returncode == 0 and b"cargo" in out.stdout
        except (OSError, subprocess.SubprocessError):
            works = False
    if not works:
        sys.stderr.write("\nerror: %s\n\n" % message(platform_tag()))
        sys.stderr.flush()
        raise SystemExit(1)


def _maturin():
    import maturin

    return maturin


def get_requires_for_build_wheel(config_settings=None):
    _check_toolchain()
    return _maturin().get_requires_for_build_wheel(config_settings)


def prepare_metadata_for_build_wheel(metadata_directory, config_settings=None):
    _check_toolchain()
    return _maturin().prepare_metadata_for_build_wheel(metadata_directory, config_settings)


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    _check_toolchain()
    return _maturin().build_wheel(wheel_directory, config_settings, metadata_directory)


def get_requires_for_build_editable(config_settings=None):
    _check_toolchain()
    return _maturin().get_requires_for_build_editable(config_settings)


def prepare_metadata_for_build_editable(metadata_directory, config_settings=None):
    _check_toolchain()
    return _maturin().prepare_metadata_for_build_editable(metadata_directory, config_settings)


def build_editable(wheel_directory, config_settings=None, metadata_directory=None):
    _check_toolchain()
    return _maturin().build_editable(wheel_directory, config_settings, metadata_directory)


def get_requires_for_build_sdist(config_settings=None):
    return _maturin().get_requires_for_build_sdist(config_settings)


def build_sdist(sdist_directory, config_settings=None):
    return _maturin().build_sdist(sdist_directory, config_settings)
