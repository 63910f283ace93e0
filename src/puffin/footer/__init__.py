"""The footer's JSON: one parser (the door every reader goes through) and the writer."""
