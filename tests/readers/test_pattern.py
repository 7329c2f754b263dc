"""User line patterns: --pattern, --pattern-glob and tanalyze.toml / [tool.tanalyze]."""

import pytest

from tanalyze import load
from tanalyze.cli import main
from tanalyze.errors import ConfigError, InputError
from tanalyze.readers.text.pattern import compile_pattern, patterns_from_config
from tests.readers.text_helpers import check, write

LOG = "".join(f"[worker] it={i} | loss={3 - i / 10:.2f} | acc={i * 5}%\n" for i in range(1, 6)) + "done\n"
PATTERN = r"it=(?P<step>\d+) \| loss=(?P<loss>\S+) \| acc=(?P<acc>[\d.]+)%"


def test_pattern_reads_files_no_reader_knows(tmp_path):
    write(tmp_path / "run1" / "console.txt", LOG)
    logs = load(tmp_path, patterns=[PATTERN])
    assert logs.runs["run1"].format == "pattern"
    check(logs.scalars, "loss", {1: 2.9, 5: 2.5}, count=5)
    check(logs.scalars, "acc", {3: 15.0}, count=5)
    assert "read with the user pattern" in "\n".join(logs.runs["run1"].notes)


def test_without_a_step_group_the_step_is_the_match_count(tmp_path):
    write(tmp_path / "console.txt", LOG)
    logs = load(tmp_path / "console.txt", patterns=[r"loss=(?P<loss>\S+) "])
    check(logs.scalars, "loss", {0: 2.9, 4: 2.5}, count=5)
    assert "no 'step' group" in "\n".join(logs.runs["console.txt"].notes)


def test_tag_and_value_groups(tmp_path):
    write(tmp_path / "kv.log", "step 1 a=0.5\nstep 1 b=2\nstep 2 a=0.25\n")
    logs = load(tmp_path, patterns=[r"step (?P<step>\d+) (?P<tag>\w+)=(?P<value>\S+)"])
    check(logs.scalars, "a", {1: 0.5, 2: 0.25}, count=2)
    check(logs.scalars, "b", {1: 2.0}, count=1)


def test_values_that_are_not_numbers_are_counted(tmp_path):
    write(tmp_path / "kv.log", "step 1 loss=0.5\nstep 2 loss=oops\nstep 3 loss=0.25\n")
    logs = load(tmp_path, patterns=[r"step (?P<step>\d+) loss=(?P<loss>\S+)"])
    check(logs.scalars, "loss", {1: 0.5, 3: 0.25}, count=2)
    (warning,) = logs.runs[tmp_path.name].warnings
    assert warning.count == 1 and "line 2: 'step 2 loss=oops'" in warning.message


def test_a_glob_takes_files_before_the_readers(tmp_path):
    nanogpt_like = "iter 1: loss 2.0000, time 10.00ms, mfu 1.00%\niter 2: loss 1.0000, time 10.00ms, mfu 1.00%\n"
    write(tmp_path / "a" / "train.log", nanogpt_like)
    write(tmp_path / "b" / "train.log", nanogpt_like)
    from tanalyze.readers.text.pattern import UserPattern

    forced = UserPattern(r"^iter (?P<step>\d+): loss (?P<my_loss>\S+),", "a/*.log")
    logs = load(tmp_path, patterns=[forced])
    assert logs.runs["a"].format == "pattern" and logs.runs["b"].format == "nanogpt"
    check(logs.scalars_of("a"), "my_loss", {1: 2.0, 2: 1.0}, count=2)


@pytest.mark.parametrize(
    ("regex", "message"),
    [
        (r"it=(?P<step>\d+", "missing ), unterminated subpattern at position 3"),
        (r"loss=(\S+)", "has no named groups"),
        (r"(?P<tag>\w+)=\S+", "'tag' group without its partner"),
        (r"it=(?P<step>\d+)", "names no value"),
    ],
)
def test_bad_patterns_are_input_errors_naming_the_problem(tmp_path, regex, message):
    with pytest.raises(InputError, match="pattern") as info:
        compile_pattern(regex)
    assert message in str(info.value) and regex in str(info.value)


def test_cli_pattern_and_bad_pattern_exit_codes(tmp_path, capsys):
    write(tmp_path / "console.txt", LOG)
    assert main(["runs", str(tmp_path), "--pattern", PATTERN, "-q"]) == 0
    out = capsys.readouterr().out
    assert "[pattern]" in out and "loss" in out and "5 pts" in out
    assert main(["runs", str(tmp_path), "--pattern", r"it=(?P<step>\d+"]) == 2
    err = capsys.readouterr().err
    assert "--pattern: invalid regular expression" in err and "missing )" in err
    assert main(["runs", str(tmp_path), "--pattern-glob", "*.txt"]) == 2
    assert "--pattern-glob needs a --pattern" in capsys.readouterr().err
    output = tmp_path / "out.csv"
    assert main(["parse", str(tmp_path), "--pattern", PATTERN, "-o", str(output), "-q"]) == 0
    assert output.read_text().count("\n") == 11  # header + 5 loss + 5 acc


def test_tanalyze_toml_patterns_apply_to_the_folder(tmp_path):
    write(tmp_path / "tanalyze.toml", f"patterns = ['{PATTERN}']\n")
    write(tmp_path / "logs" / "console.txt", LOG)
    logs = load(tmp_path / "logs")
    check(logs.scalars, "loss", {2: 2.8}, count=5)
    (pattern,) = patterns_from_config(tmp_path / "logs")
    assert pattern.glob is None and pattern.origin.endswith("tanalyze.toml patterns[0]")


def test_pyproject_table_maps_globs_to_patterns(tmp_path):
    write(tmp_path / "pyproject.toml", f"[project]\nname = 'x'\n\n[tool.tanalyze.patterns]\n'*.txt' = '{PATTERN}'\n")
    write(tmp_path / "console.txt", LOG)
    (pattern,) = patterns_from_config(tmp_path)
    assert pattern.glob == "*.txt"
    logs = load(tmp_path)
    check(logs.scalars, "acc", {5: 25.0}, count=5)


def test_invalid_config_is_a_config_error_naming_the_file(tmp_path, capsys):
    write(tmp_path / "tanalyze.toml", "patterns = ['it=(?P<step>\\\\d+']\n")
    write(tmp_path / "console.txt", LOG)
    with pytest.raises(ConfigError) as info:
        load(tmp_path)
    assert "tanalyze.toml patterns[0]" in str(info.value) and "invalid regular expression" in str(info.value)
    assert main(["runs", str(tmp_path), "-q"]) == 2
    assert "tanalyze.toml" in capsys.readouterr().err
    write(tmp_path / "tanalyze.toml", "patterns = [\n")
    with pytest.raises(ConfigError, match="invalid TOML"):
        load(tmp_path)
    write(tmp_path / "tanalyze.toml", "patterns = 3\n")
    with pytest.raises(ConfigError, match="must be a list of regexes or a table"):
        load(tmp_path)


def test_several_patterns_read_one_file_together(tmp_path, capsys):
    """--pattern is repeatable: each pattern reads its own lines of the file (train and eval lines here)."""
    from tanalyze.cli import main

    log = tmp_path / "train.out"
    log.write_text("banner\nstep 1 loss 2.5\nstep 2 loss 2.0\neval at 2: val 2.2\nstep 3 loss 1.8\neval at 3: val 2.1\n")
    logs = load(tmp_path, cache=False, patterns=[r"step (?P<step>\d+) loss (?P<loss>\S+)",
                                                          r"eval at (?P<step>\d+): val (?P<val_loss>\S+)"])
    run = next(iter(logs.runs))
    assert list(logs.series(run, "loss").items()) == [(1, 2.5), (2, 2.0), (3, 1.8)]
    assert list(logs.series(run, "val_loss").items()) == [(2, 2.2), (3, 2.1)]
    assert main(["runs", str(tmp_path), "--no-cache", "--pattern", r"step (?P<step>\d+) loss (?P<loss>\S+)",
                 "--pattern", r"eval at (?P<step>\d+): val (?P<val_loss>\S+)"]) == 0
    assert "5 scalar points" in capsys.readouterr().out
