"""Where `make install PREFIX=P` puts the Python client, asked of the
interpreter that will import it (the Makefile's $(PYTHON)).

Prints one line, "searched DIR" or "unsearched DIR":
- searched: DIR is a site directory this interpreter already searches
  (sys.path) whose prefix is P, as its install schemes (sysconfig) name it
  for P. Debian's /usr/bin/python3 3.11: the posix_local scheme gives
  /usr/local/lib/python3.11/dist-packages for /usr/local, deb_system
  /usr/lib/python3/dist-packages for /usr.
- unsearched: no scheme gives a searched directory under P; DIR is the
  posix_prefix scheme's (P/lib/python3.X/site-packages, where
  `pip install --prefix P` would put it), to be named on PYTHONPATH.

Usage: python3 scripts/python-site.py PREFIX
"""
import os
import sys
import sysconfig


def owner_prefix(site_dir):
    """The prefix a site directory belongs to: the part before /lib/."""
    head, sep, _ = site_dir.partition("/lib/")
    return head if sep else None


def scheme_dirs(prefix):
    """purelib of every POSIX scheme, for bases P and this interpreter's
    own (posix_local adds /local to sys.prefix), default scheme first."""
    names = [n for n in sysconfig.get_scheme_names()
             if n.startswith("posix_") or n.startswith("deb_")]
    default = getattr(sysconfig, "get_default_scheme", lambda: "posix_prefix")()
    names.sort(key=lambda n: (n != default, n != "deb_system", n))
    bases = [prefix, sys.base_prefix, sys.prefix]
    for name in names:
        if name.endswith("_user") or name == "posix_home":
            continue
        for base in bases:
            try:
                yield os.path.normpath(sysconfig.get_path(
                    "purelib", name, vars={"base": base, "platbase": base}))
            except KeyError:
                pass


def main():
    if len(sys.argv) != 2 or not sys.argv[1].startswith("/"):
        sys.exit("usage: python-site.py ABSOLUTE-PREFIX")
    prefix = os.path.normpath(sys.argv[1])
    searched = {os.path.normpath(p) for p in sys.path if p}
    for d in scheme_dirs(prefix):
        if d in searched and owner_prefix(d) == prefix:
            print("searched", d)
            return
    fallback = sysconfig.get_path("purelib", "posix_prefix",
                                  vars={"base": prefix, "platbase": prefix})
    print("unsearched", os.path.normpath(fallback))


main()
