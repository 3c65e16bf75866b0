"""``ragjudge serve``: the app in annotators' browsers.

Each browser tab gets its own app process on the server (textual-serve runs it and relays the
terminal to xterm.js in the page); the project and its credentials stay on the server, handed to
the processes through the environment. The page loads nothing but what this server serves.
"""
