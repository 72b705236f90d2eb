"""Data layer: dataset location and checksums, raw loaders, text embeddings, embedded subset."""
from mibench.data.sources import (
                      DATASETS,
                      EMBEDDED,
                      cache_dir,
                      dataset_status,
                      ensure_dataset,
                      is_present,
                      resolve_data_dir,
)

__all__ = ["DATASETS", "EMBEDDED", "cache_dir", "dataset_status", "ensure_dataset", "is_present",
           "resolve_data_dir"]
