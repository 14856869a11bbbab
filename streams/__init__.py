"""Everything Kafka: the Faust app, topics, tables, stage runners, dead letters, CLI."""
