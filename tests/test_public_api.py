import tanalyze

# The public surface is a promise: changing it must be a deliberate edit of this list.
EXPECTED = {
    "__version__",
    "load",
    "discover",
    "read_run",
    "Logs",
    "RunInfo",
    "RunSpec",
    "ReadWarning",
    "Restart",
    "TanalyzeError",
    "InputError",
    "NoLogsError",
    "FormatError",
    "ConfigError",
    "diagnose",
    "diagnose_run",
    "RunDiagnosis",
    "Diagnoses",
    "resolve_roles",
    "Roles",
    "check",
    "CheckReport",
}


def test_all_is_frozen():
    assert set(tanalyze.__all__) == EXPECTED


def test_every_public_name_exists():
    for name in tanalyze.__all__:
        assert hasattr(tanalyze, name), name
