"""TensorBoard event files: the reader (``reader.py``) and its private decoding machinery.

Records are framed by ``_tfrecord``, decoded by ``_events`` (the vectorised fast path in ``_fast``,
the protobuf messages in ``_proto``), resumed runs are joined by ``_sessions``, a grown file is
read from its tail (``_tails``) and a large one window by window (``_windows``).
"""

from tanalyze.readers.tensorboard.reader import TensorBoardReader

__all__ = ["TensorBoardReader"]
