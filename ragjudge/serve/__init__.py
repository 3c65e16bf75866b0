"""The Textual app in a browser terminal (textual-serve's relay).

Each terminal gets its own app process on the server (textual-serve runs it and relays the
terminal to xterm.js in the page); the project and its credentials stay on the server, handed to
the processes through the environment. ``ragjudge serve`` (:mod:`ragjudge.web`) opens one for a
lead at ``/lead/terminal``; annotators judge in the web pages, which need no process of their own.
"""
