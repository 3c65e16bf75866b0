"""Runs as the project keeps them: whole as arrays (``stored``), and their first ranks as rows
(``head``) for the judging pool.
"""
