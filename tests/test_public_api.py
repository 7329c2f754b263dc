import tanalyze

# The public surface is a promise: changing it must be a deliberate edit of this list.
EXPECTED = {
    "__version__",
    "load",
    "from_frame",
    "discover",
    "read_run",
    "Logs",
    "RunInfo",
    "RunSpec",
    "ReadWarning",
    "Restart",
    "Phase",
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
    "RunStatus",
    "run_status",
    "sweep",
    "SweepResult",
    "report",
    "Report",
}


def test_all_is_frozen():
    assert set(tanalyze.__all__) == EXPECTED


def test_every_public_name_exists():
    for name in tanalyze.__all__:
        assert hasattr(tanalyze, name), name


# The parameters of the public functions and of the result methods a notebook uses, by name and kind
# ("*x": keyword-only, "**x": any keywords). Changing one must be a deliberate edit here too.
SIGNATURES = {
    "load": ["path", "*formats", "*progress", "*patterns", "*jobs", "*cache", "*client", "*join"],
    "from_frame": ["frame", "*run", "*step"],
    "discover": ["path", "*formats", "*patterns", "*join", "*heads"],
    "read_run": ["spec", "*cache"],
    "run_status": ["files", "*consoles", "*run_format", "*hparams", "*now"],
    "diagnose": ["logs", "*roles", "*num_classes", "*thresholds", "**params"],
    "diagnose_run": ["frame", "*run", "*format", "*roles", "*histograms", "*read_warnings", "*num_classes",
                     "*thresholds", "*hparams", "*phases", "*status", "*restarts", "*checkpoints", "*nccl", "*text",
                     "**params"],
    "resolve_roles": ["source", "overrides"],
    "check": ["candidate", "*baseline", "*config", "*roles", "*progress", "*jobs", "*cache", "*client"],
    "Logs.select": ["runs"],
    "Logs.plot": ["tag", "runs", "*ax", "*smooth"],
    "Logs.run": ["name"],
    "Logs.series": ["run", "tag"],
    "Logs.tag_summary": [],
    "Logs.summary": [],
    "RunDiagnosis.plot": ["ax"],
    "RunDiagnosis.to_dict": [],
    "RunDiagnosis.key_steps": [],
    "RunDiagnosis.distributed_line": [],
    "Diagnoses.labels": [],
    "Diagnoses.to_dict": [],
    "CheckReport.plot": ["run", "*ax"],
    "CheckReport.counts": [],
    "CheckReport.by_run": [],
    "CheckReport.to_dict": [],
    "sweep": ["logs", "*metric", "*higher", "*target", "*diagnoses"],
    "SweepResult.plot": ["experiment"],
    "SweepResult.summary_lines": [],
    "report": ["source", "diagnoses", "*title", "*smoothing", "*roles", "*formats", "*progress", "*jobs", "*cache",
               "*client", "*join", "*sections", "*scalars", "*info"],
    "Report.to_html": ["*fragment", "*progress", "*jobs"],
    "Report.save_html": ["path", "*progress", "*jobs"],
    "Report.to_dict": [],
    "Report.to_json": [],
    "Report.save_json": ["path"],
    "Report.save": ["html_path", "json_path", "*progress", "*jobs"],
}
DISPLAYED = ("Logs", "RunDiagnosis", "Diagnoses", "CheckReport", "SweepResult", "Report")


def _resolve(dotted: str):
    obj = tanalyze
    for part in dotted.split("."):
        obj = getattr(obj, part)
    return obj


def _parameters(function) -> list[str]:
    import inspect

    prefix = {inspect.Parameter.KEYWORD_ONLY: "*", inspect.Parameter.VAR_KEYWORD: "**",
              inspect.Parameter.VAR_POSITIONAL: "*"}
    return [prefix.get(p.kind, "") + p.name for p in inspect.signature(function).parameters.values() if p.name != "self"]


def test_signatures_are_frozen():
    assert {name: _parameters(_resolve(name)) for name in SIGNATURES} == SIGNATURES


def test_public_functions_and_methods_are_typed_and_documented():
    import inspect

    for name in SIGNATURES:
        function = _resolve(name)
        signature = inspect.signature(function)
        assert inspect.getdoc(function), f"{name} has no docstring"
        assert signature.return_annotation is not inspect.Signature.empty, f"{name} has no return type"
        untyped = [p.name for p in signature.parameters.values() if p.name != "self" and p.annotation is p.empty]
        assert not untyped, f"{name}: untyped parameter(s) {untyped}"


def test_results_display_themselves_in_jupyter_and_in_a_console():
    for name in DISPLAYED:
        cls = getattr(tanalyze, name)
        assert "_repr_html_" in vars(cls) and "__repr__" in vars(cls), name
