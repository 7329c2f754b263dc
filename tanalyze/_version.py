"""The version, in one place (the package metadata reads it too), so no module imports the package root for it."""

__version__ = "0.1.0"
