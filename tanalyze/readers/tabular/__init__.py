"""Structured logs written by trainers: CSV (Lightning, Keras, YOLO, any wide CSV) and JSON
(HF ``trainer_state.json``, Detectron2, DETR, MMEngine, MMDetection 2.x).

``common`` holds what every structured reader shares (point buffers, JSON lines, step columns,
config files); ``widecsv`` reads a wide CSV fast. Both are also used by the W&B and MLflow readers.
"""
