"""Console logs: one parser per trainer's print format, and the machinery they share.

A format module (``nanogpt``, ``megatron``, ``hf_console`` …) is a :class:`~._parser.TextParser`
saying what its lines look like. ``_lines`` cuts a file into chunks of whole lines, ``_parts`` drives a
parser part by part (a grown log is read on from where it stopped), ``_reader`` turns parsed files into
runs, ``_rows`` stores points compactly, ``_regex`` finds matches fast, ``_spans`` reads the lines of a
few fixed shapes at once. ``console`` finds the format of an unclaimed log; ``pattern`` reads
logs by a user's own line patterns.
"""
