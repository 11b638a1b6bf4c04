"""Question parser: question text -> prefix program tokens (bi-LSTM encoder, attention decoder)
-> a validated :class:`executors.Program` (or a decode flagged invalid)."""
