"""Analyzers: pure functions from tidy curves to frozen results with evidence."""
