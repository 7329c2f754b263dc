import pytest

from tanalyze.cli import main
from tanalyze.config import find_config, load_config
from tanalyze.errors import ConfigError
from tests.conftest import SAMPLE_RUNS


def test_tanalyze_toml_wins_over_pyproject(tmp_path):
    (tmp_path / "pyproject.toml").write_text("[tool.tanalyze.roles]\nval_loss = 'a'\n")
    assert find_config(tmp_path) == tmp_path / "pyproject.toml"
    (tmp_path / "tanalyze.toml").write_text("[roles]\nval_loss = 'b'\n")
    assert load_config(find_config(tmp_path)).roles == {"val_loss": "b"}


def test_pyproject_without_our_table_is_not_a_config(tmp_path):
    (tmp_path / "pyproject.toml").write_text("[tool.ruff]\nline-length = 100\n")
    assert find_config(tmp_path) is None
    assert load_config(search=False).roles == {}


def test_upward_search_finds_the_config_of_a_log_folder(tmp_path):
    (tmp_path / "tanalyze.toml").write_text("patterns = ['loss=(?P<loss>\\\\S+)']\n")
    deep = tmp_path / "runs" / "a"
    deep.mkdir(parents=True)
    assert find_config(deep) is None
    assert find_config(deep, upwards=True) == tmp_path / "tanalyze.toml"


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("[rolez]\nx = 'y'\n", "unknown key(s) rolez"),
        ("[roles]\nval_loss = 3\n", "must map role names to tag names"),
        ("roles = [", "invalid TOML"),
    ],
)
def test_bad_config_names_file_and_problem(tmp_path, text, fragment):
    path = tmp_path / "tanalyze.toml"
    path.write_text(text)
    with pytest.raises(ConfigError) as excinfo:
        load_config(path)
    assert fragment in str(excinfo.value) and str(path) in str(excinfo.value)


def test_diagnose_uses_roles_from_the_config(tmp_path, capsys):
    # the overfitting sample has val_loss; point the val role at the training loss instead
    config = tmp_path / "tanalyze.toml"
    config.write_text("[roles]\nval_loss = 'train_loss'\n")
    run = SAMPLE_RUNS / "overfit_lightning" / "lightning_logs" / "version_0"
    assert main(["diagnose", str(run), "--config", str(config), "-q"]) == 0
    assert "val_loss=train_loss" in capsys.readouterr().out
