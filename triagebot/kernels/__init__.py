"""Kernel builds: a kernel tree's local clone, one worktree and build directory per (tree, arch,
config), built kernels cached by commit and config, and booting one to run a command (tree.py,
config.py, build.py, boot.py, guest_init.sh); docs/kernels.md."""
