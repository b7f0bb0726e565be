"""What both generators of this folder (generate.py, generate_trees.py) draw their data from:
scikit-learn's bundled datasets (no download), as float32, and seeded missing values."""

from __future__ import annotations

import numpy as np
from sklearn import datasets

SEED = 0


def bundled_data(name: str) -> tuple[np.ndarray, np.ndarray]:
    """(x as float32, y) of iris, breast_cancer, diabetes, wine or digits."""
    loader = {"iris": datasets.load_iris, "breast_cancer": datasets.load_breast_cancer,
              "diabetes": datasets.load_diabetes, "wine": datasets.load_wine,
              "digits": datasets.load_digits}[name]
    x, y = loader(return_X_y=True)
    return x.astype(np.float32), y


def with_nans(x: np.ndarray) -> np.ndarray:
    """About one value in seven missing (NaN), at seeded positions."""
    rng = np.random.default_rng(SEED)
    x = x.copy()
    x[rng.random(x.shape) < 1 / 7] = np.nan
    return x
