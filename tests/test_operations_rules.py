"""Issue 17, part 2: `triage rules init DIR` writes the default rules for an install without a
checkout (refusing to overwrite unless --force), and the installed copy is found as the default."""
from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import PROJECT
from triagebot.cli.main import main
from triagebot.errors import TriageError
from triagebot.rules.loader import INSTALLED_RULES, packaged_rules
from triagebot.rules.settings import settings_for

CHECKOUT = PROJECT / "rules"


def _tree(root: Path) -> dict[str, bytes]:
    return {str(path.relative_to(root)): path.read_bytes() for path in sorted(root.rglob("*.toml"))}


def test_rules_init_writes_every_default_rules_file_and_they_load(tmp_path, capsys):
    target = tmp_path / "r"
    assert main(["rules", "init", str(target)]) == 0
    assert _tree(target) == _tree(CHECKOUT)
    assert "reproducers/fio.toml" in _tree(target)
    assert f"TRIAGE_RULES={target}" in capsys.readouterr().err
    assert [source.url for source in settings_for(target).sources] == \
        [source.url for source in settings_for(CHECKOUT).sources]


def test_rules_init_refuses_to_overwrite_unless_forced(tmp_path):
    target = tmp_path / "r"
    (target).mkdir()
    (target / "hosts.toml").write_text("# mine\n")
    from triagebot.cli.rules import init
    with pytest.raises(TriageError, match="already holds hosts.toml; nothing written"):
        init(target)
    assert (target / "hosts.toml").read_text() == "# mine\n" and not (target / "sources.toml").exists()
    assert main(["rules", "init", str(target)]) == 1
    init(target, force=True)
    assert _tree(target) == _tree(CHECKOUT)


def test_without_a_checkout_the_installed_copy_under_the_prefix_is_the_default(tmp_path):
    installed = tmp_path / "prefix" / INSTALLED_RULES
    installed.mkdir(parents=True)
    (installed / "sources.toml").write_text("")
    missing = tmp_path / "site-packages" / "rules"
    assert packaged_rules(missing, [str(tmp_path / "other"), str(tmp_path / "prefix")]) == installed
    assert packaged_rules(CHECKOUT, [str(tmp_path / "prefix")]) == CHECKOUT
    assert packaged_rules(missing, [str(tmp_path / "other")]) == missing


def test_pyproject_installs_every_rules_file():
    import tomllib

    data_files = tomllib.loads((PROJECT / "pyproject.toml").read_text())["tool"]["setuptools"]["data-files"]
    shipped = {Path(pattern) for patterns in data_files.values() for pattern in patterns}
    for path in CHECKOUT.rglob("*"):
        if path.is_file():
            assert any(path.relative_to(PROJECT).match(str(pattern)) for pattern in shipped), path
    for target, patterns in data_files.items():
        for pattern in patterns:
            assert Path(target) == Path("share/triagebot") / Path(pattern).parent
