#include "sync/serving.h"

__thread struct serving_frame *sync_serving;
