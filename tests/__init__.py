"""The test suite; its folders mirror src/puffin (docs/testing.md)."""
