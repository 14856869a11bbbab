"""The three stages as plain async functions, the model protocol and the order store."""
