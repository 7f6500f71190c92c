"""Small asyncio helpers that know nothing of scheduled jobs: calls detached from their caller's
context (``context``), what a loop builds ahead of the moment it needs it (``prepared``), a
pool's places shared fairly by groups of callers (``places``), and the pacing of work started at
each tick (``pacing``). import-linter keeps them from importing the rest of the operator."""
