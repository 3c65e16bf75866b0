"""Moving data in and out of a project: imports (all or nothing, staged in short transactions)
and exports in ragjudge's file formats, and the demo project.

``importing`` is the entry point (:func:`~ragjudge.services.transfer.importing.import_file`);
``common`` its shared parts; ``definitions``, ``runimport``, ``labelimport`` and
``answerimport`` each kind of file; ``exporting`` the exports.
"""
