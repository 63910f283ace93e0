"""The NDV engine: Arrow and Parquet columns to theta sketches, vectorized and in bounded memory."""
