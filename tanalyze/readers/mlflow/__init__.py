"""MLflow's local tracking stores (the ``mlruns`` file store and the SQLite backend), read without mlflow."""

from tanalyze.readers.mlflow.store import MLflowReader

__all__ = ["MLflowReader"]
